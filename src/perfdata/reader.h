// Streaming reader for every perf.data layout: file mode, pipe mode, the directory layout of
// `perf record --threads`, either byte order, zstd-compressed data. Records come out as views
// into an internal window (valid until the next call to next()); memory does not grow with
// the file size.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "perfdata/attr.h"
#include "perfdata/error.h"
#include "perfdata/features.h"
#include "perfdata/sample.h"

namespace tperf::perfdata {

struct FileSection {
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct FileHeader {
  uint64_t magic = 0;
  uint64_t size = 0;       // 104 for file mode, 16 for pipe mode
  uint64_t attr_size = 0;  // stride of one attrs entry
  FileSection attrs;
  FileSection data;
  FileSection event_types;
  std::bitset<kFeatBits> features;
};

struct EventAttr {
  PerfEventAttr attr;
  std::vector<uint64_t> ids;
  std::string name;  // EVENT_DESC / EVENT_UPDATE name, else a default one
  bool named = false;  // the name came from the file (EVENT_DESC / EVENT_UPDATE), not made here
  // The name came from an EVENT_DESC entry matched by position, neither having ids. perf 6.1's
  // script does not take such a name in a pipe (its report does).
  bool named_by_position = false;
  // Named by an EVENT_UPDATE record (pipe mode), which perf applies over any name the event had.
  bool named_by_update = false;
};

// One record. `bytes` holds header and body in the file's byte order; decode with the
// reader's swapped() flag.
struct Record {
  uint64_t offset = 0;         // file offset; for a record unpacked from COMPRESSED(2), that record's offset
  uint64_t stream_offset = 0;  // position inside the decompressed stream (compressed records only)
  bool from_compressed = false;
  // `bytes` stay where they are for as long as the Reader lives (the record lies in the mapping
  // of the whole file), so a stage that holds records may keep the span instead of a copy.
  bool stable = false;
  // `bytes` stay where they are after the delivery, until the stage that delivered the record
  // lets them go (session::OrderedEvents::Options::hold_ticket): the consumer may keep the span
  // until then instead of a copy. Only a plain record (below) is held.
  bool held = false;
  // Reader::set_holding: the window of the file the bytes lie in, kept until it is given back
  // (0: none; such bytes are valid until the next read only).
  uint64_t window = 0;
  uint32_t file_index = 0;  // 0 = main file; N+1 = data.N in the directory layout
  uint32_t type = 0;
  uint16_t misc = 0;
  uint16_t size = 0;
  std::span<const uint8_t> bytes;    // header + body
  std::span<const uint8_t> payload;  // data that follows the record outside header.size (66, 71)
  uint64_t payload_size = 0;         // its announced size (payload is left empty when it is huge)
  std::span<const uint8_t> body() const { return bytes.subspan(8); }
};

// Whether a record is described by its bytes and file offset alone: read from the file itself
// (not unpacked from COMPRESSED, not from another file of a directory), nothing beyond its
// header's size, and a header in host order that says its type, misc and size. Every record of an
// ordinary file is; a stage that hands records on may then keep only their bytes and offset.
inline bool plain_record(const Record& rec) {
  if (rec.from_compressed || rec.stream_offset != 0 || rec.file_index != 0 || rec.payload_size != 0 ||
      !rec.payload.empty() || rec.bytes.size() < 8) {
    return false;
  }
  uint32_t type;
  uint16_t misc, size;
  std::memcpy(&type, rec.bytes.data(), 4);
  std::memcpy(&misc, rec.bytes.data() + 4, 2);
  std::memcpy(&size, rec.bytes.data() + 6, 2);
  return type == rec.type && misc == rec.misc && size == rec.bytes.size();
}

// A Record's fields without its spans, packed for stages that hold many records (the ordering
// queue, the batches handed between threads), and given back to a Record in place by fill().
// The small fields are in another order than Record's: copied as they are, neighbours went into
// one wider store, and a consumer's narrower load of one of them could not be forwarded from it
// (a stall on every record).
struct RecordMeta {
  uint64_t offset = 0;
  uint64_t stream_offset = 0;
  uint32_t type = 0;
  uint32_t file_index = 0;
  uint16_t size = 0;
  uint16_t misc = 0;
  bool from_compressed = false;
  bool stable = false;

  static RecordMeta of(const Record& rec) {
    return {rec.offset, rec.stream_offset, rec.type, rec.file_index, static_cast<uint16_t>(rec.bytes.size()), rec.misc,
            rec.from_compressed, rec.stable};
  }
  // `bytes`: the record's `size` bytes; `payload`, `payload_size`: what follows it, if anything.
  void fill(Record& rec, const uint8_t* bytes, std::span<const uint8_t> payload = {}, uint64_t payload_size = 0) const {
    rec.offset = offset;
    rec.stream_offset = stream_offset;
    rec.from_compressed = from_compressed;
    rec.stable = stable;
    rec.held = false;
    rec.window = 0;
    rec.file_index = file_index;
    rec.type = type;
    rec.misc = misc;
    rec.size = size;
    rec.bytes = std::span<const uint8_t>(bytes, size);
    rec.payload = payload;
    rec.payload_size = payload_size;
  }
};

// Where an id came from in ID_INDEX: the cpu and tid its event was opened on.
struct IdInfo {
  uint32_t attr_index = 0;
  int32_t cpu = -1;
  int32_t tid = -1;
};

struct ReaderStats {
  // Records by type as they come out of next(); index = type for types < 128, unusual
  // types (simpleperf's, or garbage) in `other_types`.
  std::array<uint64_t, 128> by_type{};
  std::map<uint32_t, uint64_t> other_types;
  uint64_t records = 0;
  uint64_t unknown_records = 0;      // types tperf does not know (skipped)
  uint64_t compressed_bytes = 0;     // payload bytes of COMPRESSED(2) records
  uint64_t decompressed_bytes = 0;
  uint64_t count(uint32_t type) const;
};

class Reader {
 public:
  struct Options {
    bool decompress = true;  // unpack COMPRESSED(2) records into the records they hold
    // Map a regular file whole and hand its records out as spans into the mapping (`stable`),
    // instead of reading it with pread() into a window that is reused. Off by default: on this
    // project's 2-CPU VM, touching each page of a fresh mapping cost more than copying the
    // records where the stages keep them (report --no-children on the 1 GB fp recipe: 3.0 s of
    // CPU mapped, 2.3 s read; bench/README.md, "Reading the file").
    bool map = false;
    // Map a regular file anyway when an event copies user stacks of 4 KiB or more (--call-graph
    // dwarf): such records are mostly the copies, of which the unwinder reads the part the walk
    // goes through, and a mapping leaves the rest unread where pread copied all of it. On the
    // dwarf recipe (16 KiB copies) report --no-children took 0.06-0.08 s mapped against
    // 0.09-0.12 s read; fp and sys, which read every byte, stay faster read.
    bool map_stack_copies = true;
  };

  // Opens a file, a `perf record --threads` directory, or "-" for standard input (pipe mode).
  // Throws IoError / FormatError with the path and offset on failure.
  static std::unique_ptr<Reader> open(const std::string& path, Options options);
  static std::unique_ptr<Reader> open(const std::string& path) { return open(path, Options{}); }
  // Reads from an already open descriptor (a pipe or a file); the reader does not close it.
  static std::unique_ptr<Reader> from_fd(int fd, const std::string& name, Options options);

  virtual ~Reader();

  const std::string& path() const { return path_; }
  bool is_pipe() const { return pipe_; }
  bool is_directory() const { return directory_; }
  // The file that holds the header: the input itself, or a `perf record --threads` directory's
  // "data" file (whose modification time is the recording's).
  std::string header_file() const { return directory_ ? path_ + "/data" : path_; }
  bool swapped() const { return swap_; }
  const FileHeader& header() const { return header_; }
  const std::vector<EventAttr>& attrs() const { return attrs_; }
  const Features& features() const { return features_; }
  const ReaderStats& stats() const { return stats_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Corruption found and stepped over (a feature table outside the file, a data section cut
  // short, junk after the records...): reading went on, but the file is damaged. Malformed
  // feature payloads are in features().warnings. Commands report these after their output and
  // exit with status 2.
  const std::vector<FormatError>& errors() const { return errors_; }
  uint64_t data_size() const { return header_.data.size; }
  // The TRACING_DATA payload: the file's feature section, or a pipe's HEADER_TRACING_DATA record
  // once it has been read (empty before, and when the input has none).
  std::span<const uint8_t> tracing_data() const;
  // Its file offset, for errors (0 when unknown).
  uint64_t tracing_data_offset() const { return tracing_data_offset_; }

  // The next record. Header records of pipe mode (ATTR, FEATURE, EVENT_UPDATE, ID_INDEX) are
  // applied to attrs()/features() and also returned. Returns false at the end of the data.
  // Throws FormatError when the data cannot be followed any further.
  bool next(Record& rec);

  // Whether a record of `type` changes what the reader knows (attrs, ids, names, features,
  // tracing data) when next() returns it.
  static bool applies_in_band(uint32_t type);
  // When set, next() returns such records without applying them; the caller applies each with
  // apply_in_band() at a moment of its choosing (replay's reading thread: once the thread that
  // reads attrs and decodes samples concurrently has caught up).
  void defer_in_band(bool on) { defer_in_band_ = on; }

  // Holding: each window of the file read from now on (numbered 1, 2, ... in reading order) stays
  // where it is until release_window() gives it back, and each record read from one says which
  // (Record::window), so that the stages after the reader (the ordering queue, the batches for
  // another thread) can keep records where they lie instead of copying them. Only a regular
  // file read window by window may hold (not a pipe, a directory's streams or a mapped file):
  // returns whether this one does. Turned off, every window still held is freed: nothing may
  // point into one any more.
  bool set_holding(bool on);
  // The window being read (its records have Record::window equal to it; every window before it
  // is read to the end). 0 when not holding.
  uint64_t window_seq() const;
  // Gives back a window before the one being read (the caller points into it no more).
  void release_window(uint64_t seq);
  void apply_in_band(const Record& rec) { apply_header_record(rec); }

  // The attr a record belongs to, following perf's id rules; -1 when it cannot be told.
  int attr_index_of(const Record& rec) const;
  const EventAttr* attr_of(const Record& rec) const {
    int i = attr_index_of(rec);
    return i < 0 ? nullptr : &attrs_[static_cast<size_t>(i)];
  }
  // Decodes a SAMPLE record. Throws FormatError on a short body.
  void decode_sample(const Record& rec, Sample& out, SampleParts parts = SampleParts::kAll) const;
  // Decodes the sample_id trailer of a non-sample kernel record; false when the record's
  // event has no sample_id_all or the record type carries none.
  bool decode_sample_id(const Record& rec, Sample& out) const;

  const std::unordered_map<uint64_t, IdInfo>& ids() const { return id_map_; }

  // The timestamp of a record (SAMPLE time, or the sample_id trailer's); false when it has none.
  bool record_time(const Record& rec, uint64_t* time) const;

 protected:
  Reader() = default;

  std::string path_;
  bool pipe_ = false;
  bool directory_ = false;
  bool swap_ = false;
  FileHeader header_;
  std::vector<EventAttr> attrs_;
  Features features_;
  std::vector<uint8_t> pipe_tracing_data_;  // a pipe's HEADER_TRACING_DATA payload
  uint64_t tracing_data_offset_ = 0;
  // Written by next() for every record: on cache lines of its own, so that a thread reading the
  // records ahead does not slow down one decoding samples with the fields around it (the member
  // after them is aligned too, so that nothing else shares their last line).
  alignas(64) ReaderStats stats_;
  alignas(64) std::vector<std::string> warnings_;
  std::vector<FormatError> errors_;
  std::unordered_map<uint64_t, IdInfo> id_map_;
  // The ids to attr indexes again as a flat array while there are few (a handful of events on
  // a few CPUs): a linear search there is faster than the hash map, looked up twice per record.
  static constexpr size_t kFlatIds = 32;
  std::vector<std::pair<uint64_t, uint32_t>> flat_ids_;
  // Position rules shared by all attrs (perf gives all events the same id position).
  int sample_id_pos_ = -1;
  int trailer_id_pos_ = -1;
  // Where each attr's records keep their timestamp, worked out once (record_time() runs for
  // every record): its byte offset in a sample's body, and in the sample_id trailer of other
  // records counted back from the body's end (-1: none), with the trailer's size.
  struct TimeLayout {
    int32_t sample_at = -1;
    int32_t trailer_back = -1;
    uint32_t trailer_size = 0;
  };
  std::vector<TimeLayout> time_layouts_;  // by attr index
  bool all_same_sample_type_ = true;
  bool defer_in_band_ = false;

  void add_attr(EventAttr attr);
  void finish_attrs();
  void name_tracepoints(const std::map<uint64_t, std::string>& names);
  void apply_header_record(const Record& rec);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend struct Impl;
};

// perf's name for a record type ("MMAP", "SAMPLE", "FINISHED_ROUND", ...), "UNKNOWN" if none.
const char* record_type_name(uint32_t type);

}  // namespace tperf::perfdata
