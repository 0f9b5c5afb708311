// The files of web/ (the interactive flame page), embedded into the binary at build time by
// cmake/embed_files.cmake: tperf writes a self-contained page with nothing installed beside it.
#pragma once

#include <string_view>

namespace tperf::output::web {

std::string_view flame_html();  // the page template, with @TPERF_...@ markers
std::string_view flame_js();
std::string_view flame_css();

}  // namespace tperf::output::web
