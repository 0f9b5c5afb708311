/* Functions whose symbol names are Rust (legacy and v0) and C++ mangled names, for the demangling
 * tests: perf shows them demangled (libiberty, no parameters). argv[1]: iterations in millions. */
#include <stdlib.h>
static volatile unsigned long sink;
#define SPIN(fn, mangled)                                    \
  __attribute__((noinline)) void fn(unsigned long n) __asm__(mangled); \
  void fn(unsigned long n) {                                 \
    for (unsigned long i = 0; i < n; i++) sink += i;         \
  }
SPIN(rust_legacy, "_ZN4core3fmt5write17h0123456789abcdefE")
SPIN(rust_legacy_generic, "_ZN5alloc3vec12Vec$LT$T$GT$4push17hfedcba9876543210E")
SPIN(rust_v0, "_RNvCs15kBYyAo9fc_7mycrate4spin")
SPIN(rust_v0_method, "_RNvMNtCs1234_7mycrate3fooNtB2_3Bar3baz")
SPIN(cxx_function, "_ZN2ns3fooEPKcRKSt6vectorIiSaIiEE")
SPIN(cxx_const_method, "_ZNK2ns3Bar3getEv")
SPIN(not_mangled, "_Zbogus")
int main(int argc, char** argv) {
  unsigned long n = (argc > 1 ? strtoul(argv[1], 0, 10) : 20) * 1000000UL;
  rust_legacy(n);
  rust_legacy_generic(n);
  rust_v0(n);
  rust_v0_method(n);
  cxx_function(n);
  cxx_const_method(n);
  not_mangled(n);
  return 0;
}
