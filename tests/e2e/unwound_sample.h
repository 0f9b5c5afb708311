// One sample's user stack unwound as report and script unwind it, as a line to compare: the
// tests of the DWARF unwinder (unwinding ahead on the reading thread, the cached unwind rules)
// hold two ways of unwinding against each other sample by sample with it.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "perfdata/reader.h"
#include "session/machine.h"
#include "symbols/dwarf_unwind.h"

namespace tperf::test::e2e {

// Decodes the sample record `r` into `s`, unwinds its user stack with `unwinder` (at most
// `max_stack` frames, into `frames`, cleared first) and returns "OFFSET: ip@dso ip@dso ...";
// "" when no event of the file has the record's id.
inline std::string unwound_sample_line(const perfdata::Reader& reader, session::Machine& machine,
                                       symbols::DwarfUnwinder& unwinder, const perfdata::Record& r,
                                       unsigned max_stack, perfdata::Sample& s,
                                       std::vector<session::CallchainFrame>& frames) {
  const perfdata::EventAttr* ea = reader.attr_of(r);
  if (ea == nullptr) return "";
  reader.decode_sample(r, s);
  session::Thread& thread = machine.findnew_thread(static_cast<int32_t>(s.pid), static_cast<int32_t>(s.tid));
  frames.clear();
  unwinder.append_user_frames(ea->attr, thread, s, max_stack, &frames);
  std::string line = fmt::format("{:#x}:", r.offset);
  for (const session::CallchainFrame& f : frames) {
    line += fmt::format(" {:x}@{}", f.ip, f.map && f.map->dso && f.map->dso->name ? *f.map->dso->name : "-");
  }
  return line;
}

}  // namespace tperf::test::e2e
