/* Workload of the symbolization tests: a three-deep call chain, a hot loop made of two
 * always-inlined functions (inline chains), a call into a shared library through the PLT, and
 * static (local) functions. Built PIE and non-PIE, with and without frame pointers, stripped with
 * separate debug files. argv[1]: iterations in millions. VARIANT changes the code (build id). */
#include <stdlib.h>
#include "sym_inline.h"
void sym_lib_spin(unsigned long n);
volatile unsigned long sink;
#ifndef VARIANT
#define VARIANT 7
#endif
__attribute__((noinline)) static void hot_work(unsigned long n) { sink = hot_outer(n, VARIANT); }
__attribute__((noinline)) void middle_layer(unsigned long n) {
  hot_work(n);
  sym_lib_spin(n / 2);
}
__attribute__((noinline)) static void outer_layer(unsigned long n) {
  for (int k = 0; k < 4; k++) middle_layer(n / 4);
}
int main(int argc, char** argv) {
  unsigned long n = (argc > 1 ? strtoul(argv[1], 0, 10) : 40) * 1000000UL;
  outer_layer(n);
  return 0;
}
