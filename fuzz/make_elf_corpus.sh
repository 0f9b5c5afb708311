#!/usr/bin/env bash
# Rebuilds the seed corpus of elf_symbols_fuzzer in fuzz/corpus-elf/: small ELF files with one of
# each thing the loader and the DWARF lookup handle (.symtab with DWARF and inlines, a stripped
# file, .plt relocations with .dynsym, MiniDebugInfo, a debug-only file, .gnu_debuglink, 32-bit).
# The files are committed; rerun this only to change them (needs gcc with -m32 support, binutils, xz).
set -euo pipefail
out="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/corpus-elf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
cat >prog.c <<'SRC'
static volatile int sink;
static inline __attribute__((always_inline)) int inner(int x) { return x * 3 + sink; }
__attribute__((noinline)) static int middle(int x) { return inner(x) + inner(x + 1); }
__attribute__((noinline)) int outer(int n) { int s = 0; for (int i = 0; i < n; i++) s += middle(i); return s; }
void _start(void) { sink = outer(10); for (;;) {} }
SRC
cat >lib.c <<'SRC'
extern int ext_one(int);
extern int ext_two(int);
int lib_entry(int x) { return ext_one(x) + ext_two(x + 1); }
static int lib_local(int x) { return x * 7; }
int (*lib_ptr)(int) = lib_local;
SRC
# Small files: no libc, no unwind tables, 4 KiB pages.
flags=(-Os -fno-asynchronous-unwind-tables -fno-stack-protector -Wl,--build-id -Wl,-z,max-page-size=0x1000 -Wl,-z,norelro)
gcc "${flags[@]}" -g -nostdlib -static -o prog_static_dwarf prog.c
gcc "${flags[@]}" -g -nostdlib -static -m32 -o prog_i386_dwarf prog.c
gcc "${flags[@]}" -g1 -nostdlib -shared -fPIC -o lib_plt.so lib.c
strip -s -o prog_stripped prog_static_dwarf
printf 'outer\nmiddle\n' >keep
objcopy -S -R .comment --keep-symbols=keep prog_static_dwarf mini.elf
xz -f mini.elf
objcopy --add-section .gnu_debugdata=mini.elf.xz prog_stripped prog_minidebuginfo
objcopy --only-keep-debug prog_static_dwarf prog_debug_only
strip -s -o p2 prog_static_dwarf
objcopy --add-gnu-debuglink=prog_debug_only p2 prog_debuglink
mkdir -p "$out"
cp prog_static_dwarf prog_i386_dwarf lib_plt.so prog_stripped prog_minidebuginfo prog_debug_only prog_debuglink "$out/"
