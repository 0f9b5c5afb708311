/* Shared library of the symbolization tests: an exported function reached through the PLT. */
volatile unsigned long sym_lib_sink;
__attribute__((noinline)) void sym_lib_spin(unsigned long n) {
  for (unsigned long i = 0; i < n; i++) sym_lib_sink += i ^ (i >> 2);
}
