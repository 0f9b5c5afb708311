#include "output/unwind_summary.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace tperf::output {

namespace {

std::string percent(uint64_t part, uint64_t whole) {
  return whole ? fmt::format("{:.2f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

}  // namespace

void print_unwind_summary(std::FILE* out, const analysis::UnwindStats& s, bool dwarf_unwound) {
  std::vector<std::string> hints;
  fmt::memory_buffer b;
  auto line = [&](std::string_view format, const auto&... args) {
    b.append(std::string_view("# "));
    fmt::vformat_to(std::back_inserter(b), format, fmt::make_format_args(args...));
    b.push_back('\n');
  };

  line("Unwinding quality: {} samples, {} with a callchain, {} with user-space frames", s.samples, s.with_callchain,
       s.user_chains);
  if (s.with_callchain == 0) {
    line("  no callchains were recorded: only the sampled functions are known");
    hints.push_back("record with -g (frame pointers) or --call-graph dwarf to see who called them");
  }
  if (s.user_chains > 0) {
    auto row = [&](uint64_t n, const char* what) {
      if (n) line("  {:>10} ({:>7}) {}", n, percent(n, s.user_chains), what);
    };
    row(s.complete, "reach a thread entry point (_start, start_thread, clone): whole stacks");
    const std::string cut = fmt::format("were cut at the kernel's depth limit ({} frames)", s.max_depth);
    row(s.depth_limit, cut.c_str());
    row(s.end_unmapped, "end in an address outside every mapping: a function without frame pointers broke the walk");
    row(s.end_unsymbolized, "end in a frame without a symbol: the walk cannot be checked past it");
    row(s.end_early, "end in a named function that is no entry point: the walk stopped early");
    if (s.with_unknown) {
      line("  {:>10} ({:>7}) have [unknown] user frames", s.with_unknown,
           percent(s.with_unknown, s.user_chains));
    }
    if (s.end_unmapped || s.end_early) {
      hints.push_back("rebuild with -fno-omit-frame-pointer, or record with --call-graph dwarf");
    }
    if (s.depth_limit) {
      hints.push_back(fmt::format("raise kernel.perf_event_max_stack (sysctl) above {} and record again", s.max_depth));
    }
  }
  if (s.stack_copies) {
    if (s.stack_copies_full) {
      line("  {} of {} user stack copies ({}) filled the {} bytes asked for: deeper frames were not saved",
           s.stack_copies_full, s.stack_copies, percent(s.stack_copies_full, s.stack_copies), s.stack_copy_size);
      uint64_t bigger = s.stack_copy_size * 4 > 65528 ? 65528 : s.stack_copy_size * 4;
      if (bigger > s.stack_copy_size) hints.push_back(fmt::format("record with --call-graph dwarf,{}", bigger));
    }
    if (!dwarf_unwound) {
      line("  {} samples carry user stack copies (--call-graph dwarf) that tperf does not unwind yet:", s.stack_copies);
      line("  their user frames are missing here (perf report unwinds them)");
    }
  }
  if (!s.dsos.empty()) {
    line("  DSOs that left sampled frames without symbols (samples):");
    bool installable = false;
    for (const auto& d : s.dsos) {
      line("    {} ({}): {}", d.name, d.samples, d.why);
      installable |= !d.name.empty() && d.name.front() == '/';
    }
    if (installable) {
      hints.push_back("install their debug files (e.g. the -dbgsym/-dbg packages), or point --symfs at a copy of the "
                      "recording machine's files");
    }
  }
  if (s.deferred.any()) {
    const auto& d = s.deferred;
    line("  deferred user callchains: {} samples waited for {} CALLCHAIN_DEFERRED records", d.deferred_samples,
         d.deferred_records);
    auto row = [&](uint64_t n, const char* what) {
      if (n) line("  {:>10} ({:>7}) {}", n, percent(n, d.deferred_samples), what);
    };
    row(d.merged, "merged with their user part");
    row(d.mismatched, "met a record with another cookie (theirs was lost): kernel part alone");
    row(d.never_completed, "were never completed (no record before the end): kernel part alone");
    row(d.delivered_early, "let go early, too many waiting (kernel part alone)");
    if (d.mismatched || d.never_completed) {
      hints.push_back("lost CALLCHAIN_DEFERRED records drop user stacks: record with bigger ring buffers (-m 1024)");
    }
  }
  if (s.lost_records || s.lost_samples) {
    line("  lost: {} LOST records ({} events), {} samples (LOST_SAMPLES)", s.lost_records, s.lost_events,
         s.lost_samples);
    hints.push_back("record with bigger ring buffers (-m 1024) or a lower rate (-F 999 or a larger -c) to lose less");
  }
  for (const auto& h : hints) line("  hint: {}", h);
  b.append(std::string_view("#\n"));
  std::fwrite(b.data(), 1, b.size(), out);
}

std::string unwind_summary_text(const analysis::UnwindStats& stats, bool dwarf_unwound) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = ::open_memstream(&buf, &len);
  if (!f) return {};
  print_unwind_summary(f, stats, dwarf_unwound);
  std::fclose(f);
  std::string text(buf, len);
  std::free(buf);
  return text;
}

}  // namespace tperf::output
