// Writes perf.data files that perf 6.1 reads without warnings: file mode (streamed to disk, the
// header rewritten at the end) or pipe mode, either byte order, optionally zstd-compressed.
//
//   Writer w;                              // or Writer(Writer::Options{.pipe = true})
//   w.open("out.data");
//   w.add_attr(attr, {1, 2}, "cpu-clock");  // before the first record
//   w.set_hostname("vm");
//   RecordBuilder rb = w.builder(0);
//   w.write_record(rb.comm({.pid = 7, .tid = 7, .comm = "app"}));
//   w.finish();                            // features, attrs, header
//
// Records passed to write_record must already be in the file's byte order (build them with
// builder() or a RecordBuilder constructed with swapped()).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perfdata/attr.h"
#include "perfdata/features.h"
#include "perfdata/record_builder.h"

namespace tperf::perfdata {

class Writer {
 public:
  struct Options {
    // Pipe mode: a 16-byte header, then attrs and features as HEADER_ATTR / HEADER_FEATURE
    // records (ending with feature id `pipe_last_feature`), EVENT_UPDATE names, then the data.
    bool pipe = false;
    // Write in the byte order opposite to the host's (big-endian on x86).
    bool swap = false;
    // > 0: zstd level; records go into COMPRESSED records holding one continuous zstd stream
    // (flushed per chunk, never ended), and the COMPRESSED feature is set.
    int compression_level = 0;
    // Use COMPRESSED2 (83, newer perf) instead of COMPRESSED (81). perf 6.1 cannot read it.
    bool compressed2 = false;
    // Uncompressed bytes gathered before each flush of the zstd stream (whole records; a record
    // never waits for a later flush). Also the mmap_len announced in the COMPRESSED feature.
    size_t compress_chunk = 256 * 1024;
    // File mode: put the id arrays and attrs after the feature payloads (the layout of newer
    // `perf inject`) instead of between the header and the data (perf 6.1's layout).
    bool attrs_after_data = false;
    // Generate EVENT_DESC from the attrs unless set_feature(kFeatEventDesc, ...) was called.
    bool event_desc = true;
    // perf tells a foreign-endian feature bitmap by its HOSTNAME bit: without it perf drops every
    // feature of a swapped file. So an empty hostname is written when none was set.
    bool ensure_hostname = true;
    uint64_t pipe_last_feature = kFeatLastPerf61;
    // Records only: no file header, no attrs, no features (the data.N files of a `perf record
    // --threads` directory, whose attrs and features live in the directory's header file). With
    // compression each such file holds its own zstd stream.
    bool headerless = false;
  };

  Writer();
  explicit Writer(Options options);
  ~Writer();  // closes an owned descriptor; does not finish (the file stays incomplete)
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Creates or truncates `path`. Throws IoError naming the path and the errno text.
  void open(const std::string& path);
  // Writes to a descriptor the writer does not own (standard output for pipe mode). File mode
  // needs a seekable descriptor (it is rewound and truncated).
  void open_fd(int fd, const std::string& name);

  // An event. `ids` are the values its records carry in ID/IDENTIFIER; `name` goes into
  // EVENT_DESC (and EVENT_UPDATE in pipe mode). attr.size 0 is written as 128 (perf 6.1's
  // size); in file mode every attr gets the largest size among them (perf reads one stride).
  // Returns the attr's index.
  size_t add_attr(const PerfEventAttr& attr, std::vector<uint64_t> ids, std::string name);
  const PerfEventAttr& attr(size_t index) const { return attrs_.at(index).attr; }
  size_t attr_count() const { return attrs_.size(); }
  // A builder for records of attr `index` in this file's byte order.
  RecordBuilder builder(size_t index) const { return RecordBuilder(attrs_.at(index).attr, options_.swap); }

  // One record (header + body; for AUXTRACE/TRACING_DATA the payload that follows it may be
  // included in the span). Throws std::invalid_argument when the header size disagrees with
  // the span, IoError when writing fails.
  void write_record(std::span<const uint8_t> record);
  // Bytes appended to the data verbatim, without any check or compression (malformed files).
  void write_bytes(std::span<const uint8_t> bytes);

  // Features. Payloads are in the file's byte order (the feature_* encoders with swapped()).
  // In pipe mode they must be set before the first record.
  void set_feature(unsigned bit, std::vector<uint8_t> payload);
  void clear_feature(unsigned bit);
  bool has_feature(unsigned bit) const { return features_.count(bit) != 0; }
  void set_hostname(std::string_view s) { set_feature(kFeatHostname, feature_string(s, options_.swap)); }
  void set_osrelease(std::string_view s) { set_feature(kFeatOsrelease, feature_string(s, options_.swap)); }
  void set_version(std::string_view s) { set_feature(kFeatVersion, feature_string(s, options_.swap)); }
  void set_arch(std::string_view s) { set_feature(kFeatArch, feature_string(s, options_.swap)); }
  void set_cpudesc(std::string_view s) { set_feature(kFeatCpudesc, feature_string(s, options_.swap)); }
  void set_cpuid(std::string_view s) { set_feature(kFeatCpuid, feature_string(s, options_.swap)); }
  void set_nrcpus(uint32_t available, uint32_t online) {
    set_feature(kFeatNrcpus, feature_nrcpus(available, online, options_.swap));
  }
  void set_total_mem(uint64_t kb) { set_feature(kFeatTotalMem, feature_u64(kb, options_.swap)); }
  void set_cmdline(std::span<const std::string> argv) {
    set_feature(kFeatCmdline, feature_string_list(argv, options_.swap));
  }
  void set_build_ids(std::span<const BuildIdEntry> entries) {
    set_feature(kFeatBuildId, feature_build_ids(entries, options_.swap));
  }
  void set_sample_time(uint64_t first, uint64_t last) {
    set_feature(kFeatSampleTime, feature_sample_time(first, last, options_.swap));
  }
  void set_clockid(uint64_t resolution_ns) { set_feature(kFeatClockid, feature_u64(resolution_ns, options_.swap)); }
  void set_clock_data(const ClockData& cd) { set_feature(kFeatClockData, feature_clock_data(cd, options_.swap)); }
  void set_compressed(const CompressedInfo& ci) { set_feature(kFeatCompressed, feature_compressed(ci, options_.swap)); }
  // Only for the header file of a `perf record --threads` directory: perf 6.1 asserts on
  // DIR_FORMAT in a plain file.
  void set_dir_format(uint64_t version) { set_feature(kFeatDirFormat, feature_u64(version, options_.swap)); }

  // File mode: flushes the data, writes the feature table and payloads (and the attrs if they
  // come after the data), then rewrites the header. Pipe mode: flushes. Closes an owned
  // descriptor. Nothing may be written afterwards.
  void finish();

  // After a failed write (a full disk, a file size limit): drops what did not fully reach the
  // disk, cuts the file after the last complete flush (a record boundary), and writes a header
  // (and the features, if they still fit) so that what was written reads as a complete file.
  // Closes the output. Returns false when even the header could not be written. Pipe mode:
  // only closes.
  bool salvage();

  const Options& options() const { return options_; }
  bool swapped() const { return options_.swap; }
  const std::string& path() const { return path_; }
  // Bytes of the data section so far (compressed records as written, pending data not counted);
  // after finish() the data size in the header.
  uint64_t data_size() const;
  // File offset where the next uncompressed record lands.
  uint64_t position() const { return pos_; }
  // Uncompressed and compressed bytes that went through zstd.
  uint64_t bytes_before_compression() const { return zstd_in_; }
  uint64_t bytes_after_compression() const { return zstd_out_; }

 private:
  struct Attr {
    PerfEventAttr attr;
    std::vector<uint64_t> ids;
    std::string name;
  };
  struct Zstd;

  void check_open() const;
  void start_data();
  void emit(std::span<const uint8_t> bytes);
  void flush_buffer();
  void write_all(const uint8_t* p, size_t n);
  void compress_pending();
  void emit_pipe_attr(const Attr& a);
  void write_attrs_section();
  bool write_header(const std::map<unsigned, std::vector<uint8_t>>& feats);
  void close_owned();
  std::vector<uint8_t> event_desc_payload() const;
  std::map<unsigned, std::vector<uint8_t>> final_features() const;
  [[noreturn]] void io_fail(const char* what) const;

  Options options_;
  std::string path_;
  int fd_ = -1;
  bool own_fd_ = false;
  bool finished_ = false;
  bool data_started_ = false;  // file mode: data offset fixed; pipe mode: header records written

  std::vector<Attr> attrs_;
  size_t attrs_in_front_ = 0;  // attrs written between the header and the data
  uint64_t attrs_offset_ = 0, attrs_size_ = 0, attr_stride_ = 0;
  std::map<unsigned, std::vector<uint8_t>> features_;

  std::vector<uint8_t> buf_;  // bytes not yet written to fd_
  std::vector<size_t> emit_ends_;  // where each unit emitted into buf_ ends (whole-unit boundaries)
  uint64_t pos_ = 0;          // file offset of the end of buf_
  uint64_t flushed_pos_ = 0;  // file offset up to which every byte was written (a record boundary)
  uint64_t data_end_ = UINT64_MAX;  // set once finish() has written the last record
  uint64_t data_offset_ = 0;
  uint64_t data_size_ = 0;  // set by finish()

  std::unique_ptr<Zstd> zstd_;
  std::vector<uint8_t> pending_;  // uncompressed records waiting for the next zstd flush
  uint64_t zstd_in_ = 0, zstd_out_ = 0;
};

// Adds or replaces features of a finished file-mode perf.data in host byte order (what `perf
// record` does after reading its own data back to find build ids): the feature table and
// payloads after the data are rewritten and the header's feature bits updated; data and attrs are
// not touched. Throws IoError (unreadable, unwritable) or FormatError (not such a file, or attrs
// placed after the data).
void update_features(const std::string& path, const std::map<unsigned, std::vector<uint8_t>>& features);

}  // namespace tperf::perfdata
