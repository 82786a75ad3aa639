#!/usr/bin/env bash
# Installs what is missing (Debian bookworm, as root or with sudo), then configures and
# builds Partita in ./build. Sourced by scripts/main.sh and scripts/test.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${PARTITA_BUILD_DIR:-$ROOT/build}"

PACKAGES=(
  build-essential cmake ccache pkg-config
  libcaf-dev libtorch-dev libmetis-dev libcapnp-dev capnproto
  libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev libyaml-cpp-dev
  nlohmann-json3-dev libcli11-dev
  # `format: ntriples`: the R-GCN datasets (AIFB) ship as gzipped N-Triples.
  zlib1g-dev
  # TLS on every port (runtime/tls/): OpenSSL 3's C API.
  libssl-dev
  # `partita datasets download` (datasets/): HTTP(S) with redirects, resumed ranges and
  # deadlines (libcurl), and the zip / tar.gz archives publishers serve (libarchive).
  libcurl4-openssl-dev libarchive-dev
  # The baseline of `partita bench allreduce` only.
  libgloo-dev
  # Debian's libtorch calls the reference BLAS unless OpenBLAS provides libblas.so.3:
  # dense layers are then 15-25x slower.
  libopenblas0-pthread
  # The status page (dashboard/): its HTTP server (bookworm ships cpp-httplib compiled, a
  # shared library with a pkg-config file, not header-only) and its charts (d3, compiled
  # into the binary at build time).
  libcpp-httplib-dev libjs-d3
  # `partita plot`: PLplot and its cairo driver, which draws PNG and SVG headless.
  libplplot-dev plplot-driver-cairo
  # The status page's browser test (tests/dashboard/browser_test.sh): headless Chromium.
  chromium
  # The status page's /metrics checked as Prometheus reads it: `promtool check metrics`, and
  # a real Prometheus server that the scrape test runs on loopback.
  prometheus
  # `ip netns`, veth and bridges: the cluster tests' separate hosts (netns/netns_cluster.h).
  iproute2
  # `partita start --slurm`'s end-to-end test (tests/slurm/slurm_test.sh): Debian's Slurm
  # (slurmctld, slurmd, sbatch, srun) and MUNGE, the authentication it needs.
  slurm-wlm munge
  # `features: {storage: disk}` reads feature rows with io_uring (graph/disk_rows.h).
  liburing-dev
  # The Python package (python/): the extension's build, numpy and torch at run time, its
  # tests; and PyTorch Geometric's run-time dependencies (../shared/third_party/README.md),
  # which its tests and the export test (tests/export/pyg_export_test.py) run against.
  python3-dev python3-pybind11 python3-torch python3-numpy python3-pytest
  python3-scipy python3-tqdm python3-jinja2 python3-requests python3-pyparsing python3-sklearn
  python3-psutil python3-fsspec python3-aiohttp
  # The fuzz targets (scripts/fuzz.sh): clang and its libFuzzer, ASan and UBSan runtimes.
  clang libclang-rt-14-dev
  # The Debian packages (cmake/PartitaDebian.cmake): the man page made from --help, and the
  # checks of tests/package/deb_test.sh.
  help2man lintian
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "partita setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# libblas.so.3 is an alternative; make sure it resolves to OpenBLAS, not the reference BLAS.
if ! readlink -f "/usr/lib/$(gcc -print-multiarch)/libblas.so.3" | grep -q openblas; then
  echo "partita setup: warning: libblas.so.3 does not point to OpenBLAS; libtorch will be slow" >&2
fi

cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
# Everything (the tests among it), or only the targets a caller names in BUILD_TARGETS
# (scripts/main.sh: the CLI alone, so a first run does not wait for the test binaries).
if [ -n "${BUILD_TARGETS:-}" ]; then
  # shellcheck disable=SC2086
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target $BUILD_TARGETS
else
  cmake --build "$BUILD_DIR" -j"$(nproc)"
fi
