#include "analysis/time_filter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "perfdata/abi.h"
#include "perfdata/reader.h"

namespace tperf::analysis {

namespace {

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// perf's parse_nsec_time: seconds, optionally '.' and up to 9 decimals.
bool parse_nsec_time(std::string_view s, uint64_t* out) {
  size_t i = 0;
  uint64_t sec = 0;
  if (s.empty()) return false;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    sec = sec * 10 + static_cast<uint64_t>(s[i] - '0');
    ++i;
  }
  uint64_t nsec = 0;
  if (i < s.size()) {
    if (s[i] != '.') return false;
    std::string_view frac = s.substr(i + 1);
    if (frac.size() > 9) return false;
    for (size_t k = 0; k < 9; ++k) {
      char c = k < frac.size() ? frac[k] : '0';
      if (c < '0' || c > '9') return false;
      nsec = nsec * 10 + static_cast<uint64_t>(c - '0');
    }
  }
  *out = sec * 1000000000ULL + nsec;
  return true;
}

std::string parse_one_range(std::string_view s, TimeRange* r) {
  *r = TimeRange{};
  size_t comma = s.find(',');
  std::string_view start = s.substr(0, comma);
  std::string_view end = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
  if (!start.empty() && !parse_nsec_time(start, &r->start)) return fmt::format("invalid time '{}'", start);
  if (!end.empty() && !parse_nsec_time(end, &r->end)) return fmt::format("invalid time '{}'", end);
  if (r->end && r->end < r->start) return "the end of the time range is before its start";
  return "";
}

// "12.5%" -> 0.125
bool parse_percent(std::string_view s, double* out) {
  if (s.empty() || s.back() != '%') return false;
  std::string num(s.substr(0, s.size() - 1));
  char* end = nullptr;
  *out = std::strtod(num.c_str(), &end) / 100.0;
  return end && *end == '\0' && !num.empty();
}

// perf's set_percent_time.
bool percent_range(double start_pcnt, double end_pcnt, SampleTimeBounds b, TimeRange* r) {
  if (start_pcnt < 0.0 || start_pcnt > 1.0 || end_pcnt < 0.0 || end_pcnt > 1.0) return false;
  const uint64_t total = b.last - b.first;
  r->start = b.first + static_cast<uint64_t>(std::round(start_pcnt * static_cast<double>(total)));
  r->end = b.first + static_cast<uint64_t>(std::round(end_pcnt * static_cast<double>(total)));
  if (r->end > r->start && r->end != b.last) r->end -= 1;
  return true;
}

// "10%/2": the 2nd slice of 10%.
bool percent_slash(std::string_view s, SampleTimeBounds b, TimeRange* r) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return false;
  double pcnt;
  if (!parse_percent(s.substr(0, slash), &pcnt)) return false;
  std::string idx(s.substr(slash + 1));
  char* end = nullptr;
  long i = std::strtol(idx.c_str(), &end, 10);
  if (!end || *end) return false;
  if (pcnt <= 0.0) return false;
  return percent_range(pcnt * static_cast<double>(i - 1), pcnt * static_cast<double>(i), b, r);
}

// "0%-10%".
bool percent_dash(std::string_view s, SampleTimeBounds b, TimeRange* r) {
  size_t dash = s.find('-');
  if (dash == std::string_view::npos) return false;
  double a, z;
  if (!parse_percent(s.substr(0, dash), &a) || !parse_percent(s.substr(dash + 1), &z)) return false;
  return percent_range(a, z, b, r);
}

std::string parse_percent_ranges(std::string_view text, SampleTimeBounds b, std::vector<TimeRange>* ranges) {
  const std::string bad = fmt::format("invalid time string '{}'", text);
  auto each = [&](bool (*one)(std::string_view, SampleTimeBounds, TimeRange*)) -> std::string {
    size_t pos = 0;
    while (pos < text.size()) {
      size_t comma = text.find(',', pos);
      std::string_view piece = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
      TimeRange r;
      if (!one(piece, b, &r)) return bad;
      ranges->push_back(r);
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
    return "";
  };
  if (text.find('/') != std::string_view::npos) return each(percent_slash);
  if (text.find('-') != std::string_view::npos) return each(percent_dash);
  // "50%": the first half, i.e. "50%/1"; the '%' must end the string.
  if (text.back() != '%') return bad;
  TimeRange r;
  if (!percent_slash(std::string(text) + "/1", b, &r)) return bad;
  ranges->push_back(r);
  return "";
}

}  // namespace

SampleTimeBounds sample_time_bounds(const perfdata::Reader& reader) {
  const perfdata::Features& f = reader.features();
  if (reader.is_pipe() || !f.has(perfdata::kFeatSampleTime)) return {};
  return {f.first_sample_time, f.last_sample_time};
}

std::string parse_time_ranges(std::string_view text, std::vector<TimeRange>* ranges, SampleTimeBounds bounds) {
  ranges->clear();
  if (text.empty()) return "";
  if (text.find('%') != std::string_view::npos) {
    if (bounds.first == 0 && bounds.last == 0) {
      return "no first/last sample time found in perf data (HEADER_SAMPLE_TIME), percentages cannot be used";
    }
    return parse_percent_ranges(text, bounds, ranges);
  }
  size_t commas = static_cast<size_t>(std::count(text.begin(), text.end(), ','));
  if (commas == 0) return fmt::format("invalid time string '{}': start,stop expected", text);
  if (commas == 1) {
    TimeRange r;
    if (auto e = parse_one_range(text, &r); !e.empty()) return e;
    ranges->push_back(r);
    return "";
  }
  // Several ranges: "a,b c,d ..." (perf's perf_time__parse_strs).
  std::string_view rest = text;
  while (!rest.empty()) {
    rest = trim_spaces(rest);
    if (rest.empty()) break;
    size_t comma = rest.find(',');
    if (comma == std::string_view::npos) return fmt::format("invalid time range '{}'", rest);
    size_t end = comma + 1;
    while (end < rest.size() && rest[end] == ' ') ++end;
    while (end < rest.size() && rest[end] != ' ') {
      if (rest[end] == ',') return fmt::format("invalid time range '{}'", rest);
      ++end;
    }
    std::string piece(rest.substr(0, end));
    piece.erase(std::remove(piece.begin(), piece.end(), ' '), piece.end());
    TimeRange r;
    if (auto e = parse_one_range(piece, &r); !e.empty()) return e;
    ranges->push_back(r);
    rest = rest.substr(end);
  }
  for (size_t i = 0; i + 1 < ranges->size(); ++i) {
    if ((*ranges)[i].end >= (*ranges)[i + 1].start) return "time ranges overlap or are not in order";
  }
  return "";
}

bool time_skipped(const std::vector<TimeRange>& ranges, uint64_t time) {
  if (ranges.empty() || time == 0) return false;
  if (ranges.size() == 1) {
    const TimeRange& r = ranges[0];
    return (r.start && time < r.start) || (r.end && time > r.end);
  }
  for (const TimeRange& r : ranges) {
    if (time >= r.start && (time <= r.end || !r.end)) return false;
  }
  return true;
}

}  // namespace tperf::analysis
