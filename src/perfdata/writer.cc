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
  if (options_.headerless) {
    pos_ = 0;
    return;
  }
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
  emit_ends_.push_back(buf_.size());
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
  const uint64_t buf_start = pos_ - buf_.size();
  size_t done = 0;
  while (done < buf_.size()) {
    ssize_t w = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      int err = errno;
      // What reached the disk ends at the last whole unit (record, section) inside `done`.
      auto it = std::upper_bound(emit_ends_.begin(), emit_ends_.end(), done);
      size_t whole = it == emit_ends_.begin() ? 0 : *std::prev(it);
      flushed_pos_ = buf_start + whole;
      errno = err;
      io_fail("write failed");
    }
    done += static_cast<size_t>(w);
  }
  buf_.clear();
  emit_ends_.clear();
  flushed_pos_ = pos_;
}

bool Writer::write_header(const std::map<unsigned, std::vector<uint8_t>>& feats) {
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
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

void Writer::close_owned() {
  if (own_fd_ && fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool Writer::salvage() {
  if (fd_ < 0) return false;
  finished_ = true;
  buf_.clear();
  emit_ends_.clear();
  pending_.clear();
  if (options_.pipe) {
    close_owned();
    return true;
  }
  flushed_pos_ = std::min(flushed_pos_, data_end_);
  bool ok = ::ftruncate(fd_, static_cast<off_t>(flushed_pos_)) == 0;
  if (options_.headerless) {
    data_size_ = flushed_pos_;
    close_owned();
    return ok;
  }
  if (!data_started_ || flushed_pos_ < data_offset_ || attrs_in_front_ == 0 ||
      attrs_offset_ + attrs_size_ > flushed_pos_) {
    // Not even the attrs reached the disk: an empty file says so better than a broken one.
    attrs_offset_ = attrs_size_ = 0;
    data_offset_ = kFileHeaderSize;
    data_size_ = 0;
    if (::ftruncate(fd_, static_cast<off_t>(kFileHeaderSize)) != 0) ok = false;
  } else {
    data_size_ = flushed_pos_ - data_offset_;
  }
  // Features first, so the header never points at a table that is not there.
  auto feats = final_features();
  std::vector<uint8_t> tail;
  ByteWriter tw(tail, options_.swap);
  uint64_t end = data_offset_ + data_size_;
  uint64_t payload_offset = end + feats.size() * 16;
  for (const auto& [bit, payload] : feats) {
    tw.u64(payload_offset).u64(payload.size());
    payload_offset += payload.size();
  }
  for (const auto& [bit, payload] : feats) tw.bytes(payload);
  bool feats_ok = true;
  size_t done = 0;
  while (done < tail.size()) {
    ssize_t w = ::pwrite(fd_, tail.data() + done, tail.size() - done, static_cast<off_t>(end + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      feats_ok = false;
      break;
    }
    done += static_cast<size_t>(w);
  }
  if (!feats_ok) {
    if (::ftruncate(fd_, static_cast<off_t>(end)) != 0) ok = false;
    feats.clear();
  }
  if (!write_header(feats)) ok = false;
  close_owned();
  return ok;
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
  if (options_.headerless) {
    data_offset_ = 0;
    return;
  }
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
  if (options_.headerless) {
    flush_buffer();
    data_size_ = pos_;
  } else if (!options_.pipe) {
    data_size_ = pos_ - data_offset_;
    data_end_ = pos_;
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

    if (!write_header(feats)) io_fail("write failed");
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

namespace {

[[noreturn]] void file_fail(const std::string& path, const char* what) {
  int err = errno;
  throw IoError(fmt::format("{}: {}: {}", path, what, std::strerror(err)));
}

void pread_all(int fd, const std::string& path, uint8_t* p, size_t n, uint64_t off) {
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) file_fail(path, "read failed");
    if (r == 0) throw FormatError(off, "file ends inside the feature section");
    p += r;
    n -= static_cast<size_t>(r);
    off += static_cast<uint64_t>(r);
  }
}

void pwrite_all(int fd, const std::string& path, const uint8_t* p, size_t n, uint64_t off) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) file_fail(path, "write failed");
    if (w == 0) {
      errno = EIO;
      file_fail(path, "write failed");
    }
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
}

struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

void update_features(const std::string& path, const std::map<unsigned, std::vector<uint8_t>>& features) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) file_fail(path, "cannot open for updating");
  FdCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) file_fail(path, "stat failed");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < kFileHeaderSize) throw FormatError(0, "not a perf.data file (shorter than its header)");
  uint8_t header[kFileHeaderSize];
  pread_all(fd, path, header, sizeof header, 0);
  if (load<uint64_t>(header, false) != kMagic || load<uint64_t>(header + 8, false) != kFileHeaderSize) {
    throw FormatError(0, "not a host-order file-mode perf.data header");
  }
  const uint64_t attrs_offset = load<uint64_t>(header + 24, false);
  const uint64_t attrs_size = load<uint64_t>(header + 32, false);
  const uint64_t data_offset = load<uint64_t>(header + 40, false);
  const uint64_t data_size = load<uint64_t>(header + 48, false);
  const uint64_t data_end = data_offset + data_size;
  if (data_end < data_offset || data_end > file_size) throw FormatError(40, "data section outside the file");
  if (attrs_size != 0 && attrs_offset + attrs_size > data_offset) {
    throw FormatError(24, "attrs after the data: cannot rewrite the features in place");
  }
  uint64_t words[kFeatBits / 64];
  for (size_t i = 0; i < kFeatBits / 64; ++i) words[i] = load<uint64_t>(header + 72 + 8 * i, false);

  std::map<unsigned, std::vector<uint8_t>> merged;
  uint64_t slot = data_end;
  for (unsigned bit = 0; bit < kFeatBits; ++bit) {
    if (!((words[bit / 64] >> (bit % 64)) & 1)) continue;
    uint8_t entry[16];
    pread_all(fd, path, entry, sizeof entry, slot);
    uint64_t off = load<uint64_t>(entry, false), size = load<uint64_t>(entry + 8, false);
    if (off > file_size || size > file_size - off) {
      throw FormatError(slot, fmt::format("feature {} payload outside the file", bit));
    }
    std::vector<uint8_t> payload(size);
    pread_all(fd, path, payload.data(), size, off);
    merged[bit] = std::move(payload);
    slot += 16;
  }
  for (const auto& [bit, payload] : features) {
    if (bit >= kFeatBits) throw std::invalid_argument(fmt::format("feature bit {} out of range", bit));
    merged[bit] = payload;
  }

  std::vector<uint8_t> tail;
  ByteWriter tw(tail, false);
  uint64_t payload_offset = data_end + merged.size() * 16;
  for (const auto& [bit, payload] : merged) {
    tw.u64(payload_offset).u64(payload.size());
    payload_offset += payload.size();
  }
  for (const auto& [bit, payload] : merged) tw.bytes(payload);
  pwrite_all(fd, path, tail.data(), tail.size(), data_end);
  if (::ftruncate(fd, static_cast<off_t>(data_end + tail.size())) != 0) file_fail(path, "truncate failed");
  std::vector<uint8_t> bits;
  ByteWriter bw(bits, false);
  uint64_t new_words[kFeatBits / 64] = {};
  for (const auto& [bit, payload] : merged) new_words[bit / 64] |= 1ULL << (bit % 64);
  for (uint64_t w : new_words) bw.u64(w);
  pwrite_all(fd, path, bits.data(), bits.size(), 72);
}

}  // namespace tperf::perfdata
