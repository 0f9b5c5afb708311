#!/usr/bin/env bash
# Installs every Debian package that building, testing, fuzzing and the demo need, and lets perf
# sample the kernel. Idempotent: when everything is there it changes nothing and needs no network.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

PACKAGES=(
  # toolchains and build
  build-essential g++ cmake ninja-build pkg-config clang-14 libclang-rt-14-dev lld-14 llvm-14
  # libraries tperf builds against
  libzstd-dev libfmt-dev libcli11-dev libelf-dev libdw-dev liblzma-dev libiberty-dev zlib1g-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # oracles and tools the tests and the demo run
  linux-perf binutils elfutils zstd procps
  # the export tests' oracles: protoc decodes pprof files, node runs pprof-format and speedscope's
  # app (tests/js), chromium loads that app headless
  protobuf-compiler nodejs chromium
  # glibc's debug files: real DWARF 5 line tables for the srcline tests (valgrind pulls it in too)
  libc6-dbg
)

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

# npm comes with some nodejs builds (NodeSource's) and is a Debian package of its own otherwise.
if ! command -v npm >/dev/null; then
  SUDO=()
  ((EUID == 0)) || SUDO=(sudo)
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends npm
fi

# The node packages of the export tests (tests/js/package-lock.json), installed again only when the
# lock file changed since the last install.
JS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/js"
if [[ ! -f "$JS_DIR/node_modules/.package-lock.json" || "$JS_DIR/package-lock.json" -nt "$JS_DIR/node_modules/.package-lock.json" ]]; then
  echo "setup: npm ci in $JS_DIR"
  (cd "$JS_DIR" && npm ci --no-audit --no-fund)
fi

# perf (the oracle) and later `tperf record` want kernel samples and kernel symbols. Containers
# may forbid writing these; root samples anyway, so a refusal is not an error.
if ((EUID == 0)); then
  echo -1 >/proc/sys/kernel/perf_event_paranoid 2>/dev/null || true
  echo 0 >/proc/sys/kernel/kptr_restrict 2>/dev/null || true
fi
