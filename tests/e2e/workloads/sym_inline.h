/* Inlined hot path of sym_main.c: hot_outer's loop calls hot_inner, both always inlined. */
static inline __attribute__((always_inline)) unsigned long hot_inner(unsigned long i, unsigned long k) {
  return (i * k) ^ (i >> 3);
}
static inline __attribute__((always_inline)) unsigned long hot_outer(unsigned long n, unsigned long k) {
  unsigned long s = 0;
  for (unsigned long i = 0; i < n; i++) s += hot_inner(i, k);
  return s;
}
