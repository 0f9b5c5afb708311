#include "perfdata/writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "perfdata/byte_reader.h"
#include "perfdata/byte_writer.h"
#include "perfdata/error.h"

namespace tperf::perfdata {

namespace {

constexpr size_t kBufferSize = 1 << 20;
// Largest zstd payload per record: COMPRESSED holds it unpadded after the 8-byte header;
// COMPRESSED2 adds a u64 and pads to 8.
constexpr size_t kMaxCompressedPayload = kMaxRecordSize - 8;
constexpr size_t kMaxCompressed2Payload = (kMaxRecordSize - 16) & ~size_t{7};

uint32_t effective_attr_size(const PerfEventAttr& a) { return a.size == 0 ? kAttrSizeVer7 : a.size; }

}  // namespace

struct Writer::Zstd {
  ZSTD_CCtx* cctx = nullptr;
  ~Zstd() { ZSTD_freeCCtx(cctx); }
};

Writer::Writer() : Writer(Options{}) {}

Writer::Writer(Options options) : options_(options) {
  if (options_.compression_level > 0) {
    zstd_ = std::make_unique<Zstd>();
    zstd_->cctx = ZSTD_createCCtx();
    if (!zstd_->cctx) throw std::bad_alloc();
    size_t rc = ZSTD_CCtx_setParameter(zstd_->cctx, ZSTD_c_compressionLevel, options_.compression_level);
    if (ZSTD_isError(rc)) {
      throw std::invalid_argument(fmt::format("zstd level {}: {}", options_.compression_level, ZSTD_getErrorName(rc)));
    }
  }
  if (options_.compress_chunk == 0) options_.compress_chunk = 1;
  buf_.reserve(kBufferSize);
}

Writer::~Writer() {
  if (own_fd_ && fd_ >= 0) ::close(fd_);
}

void Writer::io_fail(const char* what) const {
  int err = errno;
  throw IoError(fmt::format("{}: {}: {}", path_, what, std::strerror(err)));
}

void Writer::open(const std::string& path) {
  if (fd_ >= 0) throw std::logic_error("Writer::open: already open");
  path_ = path;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io_fail("cannot open for writing");
  try {
    open_fd(fd, path);
  } catch (...) {
    ::close(fd);
    fd_ = -1;
    throw;
  }
  own_fd_ = true;
}

void Writer::open_fd(int fd, const std::string& name) {
  if (fd_ >= 0) throw std::logic_error("Writer::open_fd: already open");
  if (finished_) throw std::logic_error("Writer::open_fd: already finished");
  path_ = name;
  if (!options_.pipe) {
    // The header is rewritten at the end: file mode needs a seekable output.
    if (::lseek(fd, 0, SEEK_SET) != 0) io_fail("file mode needs a seekable output");
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size != 0 && ::ftruncate(fd, 0) != 0) {
      io_fail("truncate failed");
    }
  }
  fd_ = fd;
  own_fd_ = false;
  ByteWriter w(buf_, options_.swap);
  if (options_.pipe) {
    w.u64(kMagic).u64(kPipeHeaderSize);
  } else {
    // A placeholder until finish(): a reader of an unfinished file sees an empty data section.
    w.u64(kMagic).u64(kFileHeaderSize);
    w.zeros(kFileHeaderSize - 16);
  }
  pos_ = buf_.size();
}

void Writer::check_open() const {
  if (finished_) throw std::logic_error("Writer: already finished");
  if (fd_ < 0) throw std::logic_error("Writer: not open");
}

size_t Writer::add_attr(const PerfEventAttr& attr, std::vector<uint64_t> ids, std::string name) {
  if (finished_) throw std::logic_error("Writer::add_attr after finish");
  Attr a{attr, std::move(ids), std::move(name)};
  a.attr.size = effective_attr_size(attr);
  attrs_.push_back(std::move(a));
  // Pipe mode can announce events at any time; file mode places late attrs after the data.
  if (options_.pipe && data_started_) emit_pipe_attr(attrs_.back());
  return attrs_.size() - 1;
}

void Writer::set_feature(unsigned bit, std::vector<uint8_t> payload) {
  if (bit >= kFeatBits) throw std::invalid_argument(fmt::format("feature bit {} out of range", bit));
  if (finished_) throw std::logic_error("Writer::set_feature after finish");
  if (options_.pipe && data_started_) {
    throw std::logic_error("Writer::set_feature: in pipe mode features must be set before the first record");
  }
  features_[bit] = std::move(payload);
}

void Writer::clear_feature(unsigned bit) {
  if (options_.pipe && data_started_) {
    throw std::logic_error("Writer::clear_feature: in pipe mode features are written with the first record");
  }
  features_.erase(bit);
}

uint64_t Writer::data_size() const {
  if (!data_started_) return 0;
  return finished_ ? data_size_ : pos_ - data_offset_;
}

void Writer::emit(std::span<const uint8_t> bytes) {
  buf_.insert(buf_.end(), bytes.begin(), bytes.end());
  pos_ += bytes.size();
  if (buf_.size() >= kBufferSize) flush_buffer();
}

void Writer::write_all(const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      io_fail("write failed");
    }
    if (w == 0) {
      errno = EIO;
      io_fail("write failed");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void Writer::flush_buffer() {
  if (buf_.empty()) return;
  write_all(buf_.data(), buf_.size());
  buf_.clear();
}

void Writer::write_attrs_section() {
  uint32_t attr_size = kAttrSizeVer0;
  for (const auto& a : attrs_) attr_size = std::max(attr_size, effective_attr_size(a.attr));
  for (auto& a : attrs_) a.attr.size = attr_size;
  attr_stride_ = attr_size + 16;

  // perf 6.1's order: every id array first, then the attr entries pointing at them.
  std::vector<uint64_t> id_offsets;
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes, options_.swap);
  for (const auto& a : attrs_) {
    id_offsets.push_back(pos_ + bytes.size());
    w.u64s(a.ids);
  }
  attrs_offset_ = pos_ + bytes.size();
  for (size_t i = 0; i < attrs_.size(); ++i) {
    if (options_.swap)
      encode_attr_swapped(attrs_[i].attr, bytes);
    else
      encode_attr(attrs_[i].attr, bytes);
    w.u64(id_offsets[i]).u64(attrs_[i].ids.size() * 8);
  }
  attrs_size_ = attrs_.size() * attr_stride_;
  emit(bytes);
}

void Writer::emit_pipe_attr(const Attr& a) {
  compress_pending();
  RecordBuilder rb({}, options_.swap);
  emit(rb.header_attr(a.attr, a.ids));
  if (!a.ids.empty() && !a.name.empty()) emit(rb.event_update_name(a.ids.front(), a.name));
}

std::vector<uint8_t> Writer::event_desc_payload() const {
  uint32_t attr_size = kAttrSizeVer0;
  for (const auto& a : attrs_) attr_size = std::max(attr_size, effective_attr_size(a.attr));
  std::vector<EventDescEntry> events;
  for (const auto& a : attrs_) {
    EventDescEntry e{a.attr, a.name, a.ids};
    e.attr.size = attr_size;
    events.push_back(std::move(e));
  }
  return feature_event_desc(events, options_.swap);
}

std::map<unsigned, std::vector<uint8_t>> Writer::final_features() const {
  auto feats = features_;
  if (options_.ensure_hostname && !feats.count(kFeatHostname)) feats[kFeatHostname] = feature_string("", options_.swap);
  if (options_.event_desc && !feats.count(kFeatEventDesc) && !attrs_.empty()) {
    feats[kFeatEventDesc] = event_desc_payload();
  }
  if (zstd_ && !feats.count(kFeatCompressed)) {
    CompressedInfo ci;
    ci.version = 0;  // what perf 6.1 writes
    ci.type = 1;     // zstd
    ci.level = static_cast<uint32_t>(options_.compression_level);
    ci.ratio = zstd_out_ ? static_cast<uint32_t>(std::lround(double(zstd_in_) / double(zstd_out_))) : 0;
    // perf sizes its decompression buffer with mmap_len: it must hold one flushed chunk.
    ci.mmap_len = static_cast<uint32_t>(std::max<size_t>(options_.compress_chunk, kMaxRecordSize + 1));
    feats[kFeatCompressed] = feature_compressed(ci, options_.swap);
  }
  return feats;
}

void Writer::start_data() {
  if (data_started_) return;
  data_started_ = true;
  if (options_.pipe) {
    RecordBuilder rb({}, options_.swap);
    for (const auto& a : attrs_) emit(rb.header_attr(a.attr, a.ids));
    for (const auto& [bit, payload] : final_features()) emit(rb.header_feature(bit, payload));
    emit(rb.header_feature(options_.pipe_last_feature));
    for (const auto& a : attrs_) {
      if (!a.ids.empty() && !a.name.empty()) emit(rb.event_update_name(a.ids.front(), a.name));
    }
    data_offset_ = pos_;
    return;
  }
  if (!options_.attrs_after_data && !attrs_.empty()) {
    write_attrs_section();
    attrs_in_front_ = attrs_.size();
  }
  data_offset_ = pos_;
}

void Writer::write_record(std::span<const uint8_t> record) {
  check_open();
  if (record.size() < 8) throw std::invalid_argument(fmt::format("record of {} bytes (at least 8)", record.size()));
  uint32_t type = load<uint32_t>(record.data(), options_.swap);
  uint16_t size = load<uint16_t>(record.data() + 6, options_.swap);
  // TRACING_DATA and AUXTRACE carry a payload after header.size; nothing else may.
  bool has_payload = type == kRecordHeaderTracingData || type == kRecordAuxtrace;
  if (size < 8 || size > record.size() || (size < record.size() && !has_payload)) {
    throw std::invalid_argument(
        fmt::format("record type {}: header size {} but {} bytes given", type, size, record.size()));
  }
  start_data();
  if (!zstd_) {
    emit(record);
    return;
  }
  // perf writes rounds and records with out-of-record payloads outside the compressed stream.
  if (type == kRecordFinishedRound || has_payload) {
    compress_pending();
    emit(record);
    return;
  }
  if (!pending_.empty() && pending_.size() + record.size() > options_.compress_chunk) compress_pending();
  pending_.insert(pending_.end(), record.begin(), record.end());
  if (pending_.size() >= options_.compress_chunk) compress_pending();
}

void Writer::write_bytes(std::span<const uint8_t> bytes) {
  check_open();
  start_data();
  compress_pending();
  emit(bytes);
}

void Writer::compress_pending() {
  if (!zstd_ || pending_.empty()) return;
  std::vector<uint8_t> out;
  ZSTD_inBuffer in{pending_.data(), pending_.size(), 0};
  const size_t step = ZSTD_CStreamOutSize();
  size_t remaining;
  // Flush, never end: the whole file is one zstd frame, as perf writes it.
  do {
    size_t old = out.size();
    out.resize(old + step);
    ZSTD_outBuffer ob{out.data() + old, step, 0};
    remaining = ZSTD_compressStream2(zstd_->cctx, &ob, &in, ZSTD_e_flush);
    if (ZSTD_isError(remaining)) {
      throw std::runtime_error(fmt::format("{}: zstd compression failed: {}", path_, ZSTD_getErrorName(remaining)));
    }
    out.resize(old + ob.pos);
  } while (remaining != 0 || in.pos < in.size);
  zstd_in_ += pending_.size();
  zstd_out_ += out.size();
  pending_.clear();

  RecordBuilder rb({}, options_.swap);
  const size_t max_piece = options_.compressed2 ? kMaxCompressed2Payload : kMaxCompressedPayload;
  std::span<const uint8_t> rest(out);
  while (!rest.empty()) {
    auto piece = rest.first(std::min(rest.size(), max_piece));
    rest = rest.subspan(piece.size());
    emit(options_.compressed2 ? rb.compressed2(piece) : rb.compressed(piece));
  }
}

void Writer::finish() {
  check_open();
  start_data();
  compress_pending();
  if (!options_.pipe) {
    data_size_ = pos_ - data_offset_;
    auto feats = final_features();
    std::vector<uint8_t> table;
    ByteWriter tw(table, options_.swap);
    uint64_t payload_offset = pos_ + feats.size() * 16;
    for (const auto& [bit, payload] : feats) {
      tw.u64(payload_offset).u64(payload.size());
      payload_offset += payload.size();
    }
    emit(table);
    for (const auto& [bit, payload] : feats) emit(payload);

    if (attrs_in_front_ != attrs_.size() || attrs_.empty()) {
      write_attrs_section();
      attrs_in_front_ = attrs_.size();
    }
    flush_buffer();

    std::vector<uint8_t> header;
    ByteWriter hw(header, options_.swap);
    hw.u64(kMagic).u64(kFileHeaderSize).u64(attr_stride_);
    hw.u64(attrs_offset_).u64(attrs_size_);
    hw.u64(data_offset_).u64(data_size_);
    hw.u64(0).u64(0);  // event_types: obsolete
    uint64_t words[kFeatBits / 64] = {};
    for (const auto& [bit, payload] : feats) words[bit / 64] |= 1ULL << (bit % 64);
    for (uint64_t word : words) hw.u64(word);
    size_t done = 0;
    while (done < header.size()) {
      ssize_t w = ::pwrite(fd_, header.data() + done, header.size() - done, static_cast<off_t>(done));
      if (w < 0) {
        if (errno == EINTR) continue;
        io_fail("write failed");
      }
      if (w == 0) {
        errno = EIO;
        io_fail("write failed");
      }
      done += static_cast<size_t>(w);
    }
  } else {
    flush_buffer();
    data_size_ = pos_ - data_offset_;
  }
  finished_ = true;
  if (own_fd_) {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) io_fail("close failed");
  }
}

}  // namespace tperf::perfdata
