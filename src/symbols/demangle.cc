#include "symbols/demangle.h"

#include <cctype>
#include <cstdlib>

#include <libiberty/demangle.h>

namespace tperf::symbols {

namespace {

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> demangle_ocaml(std::string_view s) {
  if (s.size() < 5 || s.substr(0, 4) != "caml" || !std::isupper(static_cast<unsigned char>(s[4]))) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(s.size());
  for (size_t i = 4; i < s.size(); ++i) {
    if (s[i] == '_' && i + 1 < s.size() && s[i + 1] == '_') {
      out.push_back('.');
      ++i;
    } else if (s[i] == '$' && i + 2 < s.size() && hex_digit_value(s[i + 1]) >= 0 && hex_digit_value(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_digit_value(s[i + 1]) * 16 + hex_digit_value(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  // A trailing "_<digits>" is OCaml's stamp, not part of the name.
  if (!out.empty() && std::isdigit(static_cast<unsigned char>(out.back()))) {
    size_t j = out.size() - 1;
    while (j > 0 && std::isdigit(static_cast<unsigned char>(out[j]))) --j;
    if (out[j] == '_') out.resize(j);
  }
  return out;
}

std::optional<std::string> demangle(std::string_view mangled) {
  if (mangled.empty()) return std::nullopt;
  // Every form libiberty's automatic style knows (_Z..., _R..., _GLOBAL_[._$][ID]_...) starts with
  // '_'; plain C names skip the copy below.
  if (mangled[0] == '_') {
    std::string name(mangled);
    if (char* out = cplus_demangle(name.c_str(), DMGL_NO_OPTS)) {
      std::string result(out);
      std::free(out);
      return result;
    }
    return std::nullopt;
  }
  return demangle_ocaml(mangled);
}

}  // namespace tperf::symbols
