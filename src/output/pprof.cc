#include "output/pprof.h"

#include <zlib.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "output/protobuf_writer.h"

namespace tperf::output {

namespace {

// Field numbers of profile.proto (github.com/google/pprof/proto/profile.proto).
namespace field {
constexpr uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5, kStringTable = 6,
                   kTimeNanos = 9, kDurationNanos = 10, kPeriodType = 11, kPeriod = 12, kComment = 13,
                   kDefaultSampleType = 14;
constexpr uint32_t kValueTypeType = 1, kValueTypeUnit = 2;
constexpr uint32_t kSampleLocationId = 1, kSampleValue = 2, kSampleLabel = 3;
constexpr uint32_t kLabelKey = 1, kLabelStr = 2, kLabelNum = 3;
constexpr uint32_t kMappingId = 1, kMappingStart = 2, kMappingLimit = 3, kMappingOffset = 4, kMappingFilename = 5,
                   kMappingBuildId = 6, kMappingHasFunctions = 7, kMappingHasFilenames = 8,
                   kMappingHasLineNumbers = 9, kMappingHasInlineFrames = 10;
constexpr uint32_t kLocationId = 1, kLocationMappingId = 2, kLocationAddress = 3, kLocationLine = 4;
constexpr uint32_t kLineFunctionId = 1, kLineLine = 2;
constexpr uint32_t kFunctionId = 1, kFunctionName = 2, kFunctionSystemName = 3, kFunctionFilename = 4;
}  // namespace field

class StringTable {
 public:
  StringTable() { index(""); }  // pprof requires string_table[0] == ""
  int64_t index(const std::string& s) {
    auto [it, fresh] = ids_.try_emplace(s, static_cast<int64_t>(strings_.size()));
    if (fresh) strings_.push_back(&it->first);
    return it->second;
  }
  const std::vector<const std::string*>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string, int64_t> ids_;  // node-based: the pointers in strings_ stay valid
  std::vector<const std::string*> strings_;
};

// "Tue Nov 24 20:22:39 2026" (ctime, local time) -> seconds since the epoch; 0 if not like that.
int64_t parse_ctime(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%a %b %d %H:%M:%S %Y", &tm);
  if (end == nullptr) return 0;
  tm.tm_isdst = -1;
  std::time_t t = std::mktime(&tm);
  return t == static_cast<std::time_t>(-1) ? 0 : static_cast<int64_t>(t);
}

// Takes the strings, not their indices, so that the type is interned before the unit whatever
// order a compiler evaluates arguments in (the string table's order is part of the output).
void value_type(ProtobufWriter& out, StringTable& strings, uint32_t field_number, const std::string& type_name,
                const std::string& unit_name) {
  const int64_t type = strings.index(type_name);
  const int64_t unit = strings.index(unit_name);
  ProtobufWriter vt;
  vt.int_field(field::kValueTypeType, type);
  vt.int_field(field::kValueTypeUnit, unit);
  out.message_field(field_number, vt);
}

}  // namespace

std::string encode_pprof(const analysis::Profile& p) {
  using analysis::kNoIndex;
  ProtobufWriter out;
  StringTable strings;

  // Sample types: (samples, period sum) per event.
  const size_t nevents = p.events.size();
  for (const analysis::ProfileEvent& e : p.events) {
    value_type(out, strings, field::kSampleType, nevents == 1 ? "samples" : e.name + "_samples", "count");
    value_type(out, strings, field::kSampleType, e.name, e.unit);
  }

  // Locations: a non-inlined frame with the inlined frames above it, keyed by that frame list
  // (innermost first), numbered as first met walking the stacks leaf first.
  std::map<std::vector<uint32_t>, uint64_t> location_ids;
  std::vector<const std::vector<uint32_t>*> locations;
  auto location_of = [&](const std::vector<uint32_t>& frames) {
    auto [it, fresh] = location_ids.try_emplace(frames, locations.size() + 1);
    if (fresh) locations.push_back(&it->first);
    return it->second;
  };

  // Samples: one per (thread, stack), values of every event side by side.
  struct SampleKey {
    uint32_t thread, stack;
    bool operator<(const SampleKey& o) const { return thread != o.thread ? thread < o.thread : stack < o.stack; }
  };
  std::map<SampleKey, size_t> sample_index;
  std::vector<std::pair<SampleKey, std::vector<int64_t>>> samples;
  std::vector<uint64_t> event_samples(nevents), event_weight(nevents);
  for (const analysis::ProfileCount& c : p.counts) {
    auto [it, fresh] = sample_index.try_emplace(SampleKey{c.thread, c.stack}, samples.size());
    if (fresh) samples.emplace_back(SampleKey{c.thread, c.stack}, std::vector<int64_t>(2 * nevents));
    auto& values = samples[it->second].second;
    values[2 * c.event] += static_cast<int64_t>(c.samples);
    values[2 * c.event + 1] += static_cast<int64_t>(c.weight);
    event_samples[c.event] += c.samples;
    event_weight[c.event] += c.weight;
  }

  const int64_t key_pid = strings.index("pid"), key_tid = strings.index("tid"), key_comm = strings.index("comm");
  std::vector<uint64_t> location_list;
  std::vector<uint32_t> group;
  for (const auto& [key, values] : samples) {
    location_list.clear();
    group.clear();
    for (uint32_t s = key.stack; s != kNoIndex; s = p.stacks[s].parent) {
      const uint32_t fi = p.stacks[s].frame;
      group.push_back(fi);
      if (!p.frames[fi].inlined) {
        location_list.push_back(location_of(group));
        group.clear();
      }
    }
    if (!group.empty()) location_list.push_back(location_of(group));  // inlined frames without their caller

    ProtobufWriter sample;
    sample.packed_field(field::kSampleLocationId, location_list);
    sample.packed_field(field::kSampleValue, values);
    const analysis::ProfileThread& t = p.threads[key.thread];
    ProtobufWriter label;
    label.int_field(field::kLabelKey, key_pid);
    label.int_field(field::kLabelNum, t.pid);
    sample.message_field(field::kSampleLabel, label);
    label.clear();
    label.int_field(field::kLabelKey, key_tid);
    label.int_field(field::kLabelNum, t.tid);
    sample.message_field(field::kSampleLabel, label);
    label.clear();
    label.int_field(field::kLabelKey, key_comm);
    label.int_field(field::kLabelStr, strings.index(t.comm));
    sample.message_field(field::kSampleLabel, label);
    out.message_field(field::kSample, sample);
  }

  // Mappings: what the frames in them tell (symbols, files, lines, inline frames).
  std::vector<uint8_t> has_functions(p.mappings.size()), has_files(p.mappings.size()), has_lines(p.mappings.size()),
      has_inline(p.mappings.size());
  for (const analysis::ProfileFrame& f : p.frames) {
    if (f.mapping == kNoIndex) continue;
    if (f.function != kNoIndex && p.functions[f.function].name != "[unknown]") has_functions[f.mapping] = 1;
    if (!f.file.empty()) has_files[f.mapping] = 1;
    if (f.line != 0) has_lines[f.mapping] = 1;
    if (f.inlined) has_inline[f.mapping] = 1;
  }
  for (size_t i = 0; i < p.mappings.size(); ++i) {
    const analysis::ProfileMapping& m = p.mappings[i];
    ProtobufWriter mapping;
    mapping.uint_field(field::kMappingId, i + 1);
    mapping.uint_field(field::kMappingStart, m.start);
    mapping.uint_field(field::kMappingLimit, m.limit);
    mapping.uint_field(field::kMappingOffset, m.offset);
    mapping.int_field(field::kMappingFilename, strings.index(m.path));
    mapping.int_field(field::kMappingBuildId, strings.index(m.build_id));
    mapping.uint_field(field::kMappingHasFunctions, has_functions[i]);
    mapping.uint_field(field::kMappingHasFilenames, has_files[i]);
    mapping.uint_field(field::kMappingHasLineNumbers, has_lines[i]);
    mapping.uint_field(field::kMappingHasInlineFrames, has_inline[i]);
    out.message_field(field::kMapping, mapping);
  }

  for (size_t i = 0; i < locations.size(); ++i) {
    const std::vector<uint32_t>& frames = *locations[i];
    const analysis::ProfileFrame& base = p.frames[frames.back()];
    ProtobufWriter location;
    location.uint_field(field::kLocationId, i + 1);
    if (base.mapping != kNoIndex) location.uint_field(field::kLocationMappingId, base.mapping + 1);
    location.uint_field(field::kLocationAddress, base.address);
    for (uint32_t fi : frames) {
      const analysis::ProfileFrame& f = p.frames[fi];
      if (f.function == kNoIndex) continue;
      ProtobufWriter line;
      line.uint_field(field::kLineFunctionId, f.function + 1);
      line.int_field(field::kLineLine, f.line);
      location.message_field(field::kLocationLine, line);
    }
    out.message_field(field::kLocation, location);
  }

  for (size_t i = 0; i < p.functions.size(); ++i) {
    const analysis::ProfileFunction& fn = p.functions[i];
    ProtobufWriter function;
    function.uint_field(field::kFunctionId, i + 1);
    const int64_t name = strings.index(fn.name);
    function.int_field(field::kFunctionName, name);
    function.int_field(field::kFunctionSystemName, name);
    function.int_field(field::kFunctionFilename, strings.index(fn.file));
    out.message_field(field::kFunction, function);
  }

  int64_t captured = 0;
  std::vector<int64_t> comments;
  for (const auto& [k, v] : p.info) {
    if (k == "captured on") captured = parse_ctime(v);
    comments.push_back(strings.index(k + ": " + v));
  }
  out.int_field(field::kTimeNanos, p.wall_time_ns ? p.wall_time_ns : captured * 1000000000);
  out.int_field(field::kDurationNanos, static_cast<int64_t>(p.last_time - p.first_time));
  if (nevents > 0) {
    value_type(out, strings, field::kPeriodType, p.events[0].name, p.events[0].unit);
    // The mean period of the first event: exact for -c, the average of the kernel's choices for -F.
    if (event_samples[0] > 0) {
      out.int_field(field::kPeriod,
                    static_cast<int64_t>((event_weight[0] + event_samples[0] / 2) / event_samples[0]));
    }
  }
  for (int64_t c : comments) out.int_field(field::kComment, c);
  if (nevents > 0) out.int_field(field::kDefaultSampleType, strings.index(p.events[0].name));

  for (const std::string* s : strings.strings()) out.bytes_field(field::kStringTable, *s);
  return std::move(out.bytes());
}

std::string gzip_compress(const std::string& data) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("zlib: deflateInit2 failed");
  }
  // In steps zlib's 32-bit counters can take, whatever the size of the profile.
  constexpr size_t kStep = size_t{1} << 30;
  std::string out;
  std::string chunk(1 << 20, '\0');
  size_t offset = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.avail_in == 0 && offset < data.size()) {
      const size_t n = std::min(kStep, data.size() - offset);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + offset));
      zs.avail_in = static_cast<uInt>(n);
      offset += n;
    }
    zs.next_out = reinterpret_cast<Bytef*>(chunk.data());
    zs.avail_out = static_cast<uInt>(chunk.size());
    rc = deflate(&zs, offset == data.size() ? Z_FINISH : Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) break;
    out.append(chunk.data(), chunk.size() - zs.avail_out);
  }
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib: deflate failed");
  return out;
}

}  // namespace tperf::output
