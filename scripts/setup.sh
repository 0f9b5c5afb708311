#!/usr/bin/env bash
# Installs every Debian package that building, testing, fuzzing and the demo need, the npm
# packages of the browser tests (tests/browser) and of the export tests (tests/js), and lets perf sample the kernel. Idempotent:
# when everything is there it changes nothing and needs no network.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

PACKAGES=(
  # toolchains and build
  build-essential g++ cmake ninja-build pkg-config clang-14 libclang-rt-14-dev lld-14 llvm-14 ccache
  # libraries tperf builds against
  libzstd-dev libfmt-dev libcli11-dev libelf-dev libdw-dev liblzma-dev libiberty-dev zlib1g-dev
  # xxHash: the key hash of report's sample batching and the stack table
  libxxhash-dev
  # libtraceevent: evaluates tracepoint print formats for script's trace field, as perf does
  libtraceevent-dev
  # the BPF way of record --off-cpu: libbpf to load it, bpftool to embed it as a skeleton (clang-14 compiles it)
  libbpf-dev bpftool
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # oracles and tools the tests and the demo run
  linux-perf binutils elfutils zstd procps
  # glibc's debug files: real DWARF 5 line tables for the srcline tests (valgrind pulls it in too)
  libc6-dbg
  # the flame page's browser tests: headless Chromium (driven by puppeteer-core, from npm below)
  # and python3, whose json and xml parsers judge the page's data and the SVG
  chromium python3
  # the export tests' pprof oracle: protoc decodes tperf's pprof files with tests/data/profile.proto
  protobuf-compiler
)
# node and npm for the browser tests, from Debian unless a node is already installed (a
# NodeSource nodejs carries its own npm and conflicts with Debian's npm package).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  PACKAGES+=(nodejs npm)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
    SUDO=(sudo)
  fi
  "${SUDO[@]}" apt-get update -q
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# puppeteer-core, pinned by tests/browser/package-lock.json. It drives the system's Chromium and
# downloads no browser. Skipped when the tree was installed from this very lock file (the stamp).
BROWSER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/browser" && pwd)
if ! cmp -s "$BROWSER_DIR/package-lock.json" "$BROWSER_DIR/node_modules/.tperf-installed-lock" 2>/dev/null ||
   [[ ! -f "$BROWSER_DIR/node_modules/puppeteer-core/package.json" ]]; then
  echo "setup: npm ci in tests/browser"
  (cd "$BROWSER_DIR" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error &&
    cp package-lock.json node_modules/.tperf-installed-lock)
fi

# The export tests' node packages, pinned by tests/js/package-lock.json: pprof-format (a second
# pprof decoder), speedscope (its built app, loaded in Chromium) and puppeteer-core. Same stamp.
JS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/js" && pwd)
if ! cmp -s "$JS_DIR/package-lock.json" "$JS_DIR/node_modules/.tperf-installed-lock" 2>/dev/null ||
   [[ ! -f "$JS_DIR/node_modules/speedscope/package.json" ]]; then
  echo "setup: npm ci in tests/js"
  (cd "$JS_DIR" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error &&
    cp package-lock.json node_modules/.tperf-installed-lock)
fi

# perf (the oracle) and later `tperf record` want kernel samples and kernel symbols. Containers
# may forbid writing these; root samples anyway, so a refusal is not an error.
if ((EUID == 0)); then
  echo -1 >/proc/sys/kernel/perf_event_paranoid 2>/dev/null || true
  echo 0 >/proc/sys/kernel/kptr_restrict 2>/dev/null || true
fi
