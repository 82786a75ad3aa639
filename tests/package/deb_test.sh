#!/usr/bin/env bash
# The Debian packages as an administrator gets them (cmake/PartitaDebian.cmake).
#
#   deb_test.sh BUILD_DIR
#
# Builds the packages of BUILD_DIR with cpack into a temporary folder, then checks
#   - the split: partita has the command line, the service and its conffile and no headers;
#     libpartita-dev the headers, static libraries and CMake package and no binary;
#     python3-partita (when the build has the Python package) the module, importable;
#   - the Depends: each package's names the package of every shared library its ELF files
#     link (NEEDED, looked up with dpkg -S), and the hand-added ones (adduser, OpenBLAS, the
#     -dev packages of libpartita-dev);
#   - each package's copyright (DEP-5) and changelog.Debian.gz, and partita's man page;
#   - lintian: no error (its warnings are printed);
#   - the service: from the partita package unpacked with dpkg -x into a temporary root,
#     `partita --help`, then the unit's ExecStart with the unit's environment and its
#     conffile's (as systemd expands them), on a free loopback port instead of 7070, in a
#     home folder of its own: the head must listen, answer `partita status`, and exit 0 on
#     SIGTERM, as systemctl stop sends it.
# PARTITA_DEB_PYTHON=ON: the build has the Python package; PARTITA_DEB_MAN_PAGE=ON: help2man
# made the man page (both set by the test from the build). Nothing is installed on the
# system. Exit 77 (skipped) without cpack, dpkg-deb, lintian or objdump.
# Every step has a deadline; the daemon is killed on any exit; the temporary folder is
# removed on success and kept (its path printed) on failure.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
for tool in cpack dpkg-deb dpkg lintian objdump; do
  if ! command -v "$tool" > /dev/null; then
    echo "SKIP: $tool is not installed (scripts/setup.sh installs it)"
    exit 77
  fi
done
build_dir=$(cd "$1" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/partita-deb-test.XXXXXX")
daemon=

cleanup() {
  local status=$?
  if [ -n "$daemon" ]; then
    kill -9 "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  if [ "$status" -eq 0 ]; then
    rm -rf "$work"
  else
    echo "Debian package test FAILED (exit $status); its files are in $work" >&2
  fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Running, and not a zombie waiting to be reaped.
running() {
  local state
  state=$(ps -o stat= -p "$1" 2> /dev/null) || return 1
  [[ $state != Z* ]]
}

# Runs "$@" with a deadline, its output in $work/$name.log, shown if it fails.
run_step() {
  local name=$1 seconds=$2
  shift 2
  echo "== $name: $*"
  if ! timeout --kill-after=10 "$seconds" "$@" > "$work/$name.log" 2>&1; then
    cat "$work/$name.log" >&2
    fail "$name failed or took more than $seconds s"
  fi
}

run_step cpack 600 cpack -G DEB -B "$work/packages" --config "$build_dir/CPackConfig.cmake"
deb() {
  local file
  file=$(ls "$work/packages/$1"_*.deb 2> /dev/null) || fail "cpack made no package $1 (see $work/cpack.log)"
  echo "$file"
}
runtime_deb=$(deb partita)
dev_deb=$(deb libpartita-dev)
packages=("$runtime_deb" "$dev_deb")
python_deb=
if [ "${PARTITA_DEB_PYTHON:-OFF}" = ON ]; then
  python_deb=$(deb python3-partita)
  packages+=("$python_deb")
fi

# ---- the split -----------------------------------------------------------------------
contents() { dpkg-deb -c "$1" | awk '{print $6}' | sed 's|^\./|/|'; }
has() {
  contents "$1" | grep -qx -- "$2" || fail "$(basename "$1") lacks $2"
}
lacks() {
  if contents "$1" | grep -q -- "$2"; then
    fail "$(basename "$1") holds $(contents "$1" | grep -- "$2" | head -1), which belongs in another package"
  fi
}
has "$runtime_deb" /usr/bin/partita
has "$runtime_deb" /usr/libexec/partita/partita-full
has "$runtime_deb" /lib/systemd/system/partita.service
has "$runtime_deb" /etc/partita/partita.conf
lacks "$runtime_deb" '^/usr/include/'
lacks "$runtime_deb" '\.a$'
has "$dev_deb" /usr/include/partita/runtime/runtime.h
has "$dev_deb" /usr/include/partita/runtime/tls/credentials.h
has "$dev_deb" /usr/lib/libpartita_training.a
has "$dev_deb" /usr/lib/cmake/Partita/PartitaConfig.cmake
lacks "$dev_deb" '^/usr/bin/.'
lacks "$dev_deb" '^/etc/.'
if [ -n "$python_deb" ]; then
  has "$python_deb" /usr/lib/python3/dist-packages/partita/__init__.py
  contents "$python_deb" | grep -q '^/usr/lib/python3/dist-packages/partita/_partita\..*\.so$' ||
    fail "python3-partita lacks the extension module"
  lacks "$python_deb" '^/usr/bin/.'
fi
dpkg-deb -e "$runtime_deb" "$work/control"
grep -qx /etc/partita/partita.conf "$work/control/conffiles" || fail "partita.conf is not a conffile"
[ -x "$work/control/postinst" ] || fail "partita has no postinst (it creates the service's user)"
grep -q 'adduser --system' "$work/control/postinst" || fail "the postinst creates no system user"

# Each package's copyright and changelog, and the man page when help2man made it.
for p in "${packages[@]}"; do
  name=$(dpkg-deb -f "$p" Package)
  has "$p" "/usr/share/doc/$name/copyright"
  has "$p" "/usr/share/doc/$name/changelog.Debian.gz"
done
if [ "${PARTITA_DEB_MAN_PAGE:-OFF}" = ON ]; then
  has "$runtime_deb" /usr/share/man/man1/partita.1.gz
fi

# ---- Depends -------------------------------------------------------------------------
# The package that ships the library a soname resolves to on this machine.
# dpkg knows a file by the path its package ships (/lib/... or /usr/lib/... on a merged
# /usr), so each spelling is asked.
library_package() {
  local path candidate owner
  path=$(ldconfig -p | awk -v so="$1" '$1 == so {print $NF; exit}')
  [ -n "$path" ] || fail "$1 (linked by a packaged file) is not a library of this machine"
  for candidate in "$path" "$(readlink -f "$path")" "${path#/usr}" "/usr$path"; do
    owner=$(dpkg -S "$candidate" 2> /dev/null | head -1 | cut -d: -f1) || true
    if [ -n "$owner" ]; then
      echo "$owner"
      return
    fi
  done
}
# A package's name and the names it provides, one a line.
provided_names() {
  echo "$1"
  dpkg-query -W -f='${Provides}\n' "$1" 2> /dev/null | tr ',' '\n' | sed 's/^ *//; s/ *(.*//' | grep . || true
}
depends_of() { dpkg-deb -f "$1" Depends | tr ',' '\n' | sed 's/^ *//; s/ *(.*//; s/:any$//'; }
check_linked_depends() {
  local deb=$1 root file so package
  root=$work/x-$(basename "$1" .deb)
  mkdir -p "$root"
  dpkg -x "$deb" "$root"
  local depends
  depends=$(depends_of "$deb")
  while IFS= read -r file; do
    objdump -p "$file" > /dev/null 2>&1 || continue
    for so in $(objdump -p "$file" | awk '/^ *NEEDED/ {print $2}'); do
      package=$(library_package "$so")
      [ -n "$package" ] || fail "no package of this machine ships $so"
      # The owner, or a name it provides (libspdlog1.10 provides libspdlog1.10-fmt9).
      grep -qxF -f <(provided_names "$package") <<< "$depends" ||
        fail "$(basename "$deb"): ${file#"$root"} links $so of $package, which Depends does not name: $(dpkg-deb -f "$deb" Depends)"
    done
  done < <(find "$root" -type f \( -perm -u+x -o -name '*.so*' \))
}
check_linked_depends "$runtime_deb"
[ -z "$python_deb" ] || check_linked_depends "$python_deb"
for needed in adduser libopenblas0-pthread plplot-driver-cairo libssl3; do
  depends_of "$runtime_deb" | grep -qx "$needed" || fail "partita does not depend on $needed"
done
for needed in libtorch-dev libcaf-dev libcapnp-dev libssl-dev libspdlog-dev liburing-dev; do
  depends_of "$dev_deb" | grep -qx "$needed" || fail "libpartita-dev does not depend on $needed"
done
if [ -n "$python_deb" ]; then
  for needed in python3 python3-numpy; do
    depends_of "$python_deb" | grep -qx "$needed" || fail "python3-partita does not depend on $needed"
  done
fi
maintainer=$(dpkg-deb -f "$runtime_deb" Maintainer)
case "$maintainer" in
  *@localhost*|"") fail "the packages' maintainer is '$maintainer'" ;;
esac

# ---- lintian -------------------------------------------------------------------------
echo "== lintian ${packages[*]##*/}"
if ! timeout --kill-after=10 600 lintian --fail-on error "${packages[@]}" > "$work/lintian.log" 2>&1; then
  cat "$work/lintian.log" >&2
  fail "lintian reports errors (above) or took more than 600 s"
fi
grep -E '^[EW]: ' "$work/lintian.log" || true  # the warnings, for the log

# ---- the service, from the unpacked package ------------------------------------------
root=$work/root
mkdir -p "$root"
dpkg -x "$runtime_deb" "$root"
run_step help 60 "$root/usr/bin/partita" --help
grep -q '^Usage: partita' "$work/help.log" || fail "partita --help printed no usage (see $work/help.log)"
if [ -n "$python_deb" ]; then
  python_root=$work/python-root
  mkdir -p "$python_root"
  dpkg -x "$python_deb" "$python_root"
  run_step import 120 env PYTHONPATH="$python_root/usr/lib/python3/dist-packages" /usr/bin/python3 -c \
    'import partita, sys; sys.exit(0 if partita.__file__.startswith(sys.argv[1]) else 1)' "$python_root"
fi

unit=$root/lib/systemd/system/partita.service
unit_value() { sed -n "s/^$1=//p" "$unit"; }
[ "$(unit_value User)" = partita ] || fail "the unit does not run as the user partita"
[ "$(unit_value EnvironmentFile)" = /etc/partita/partita.conf ] || fail "the unit reads no /etc/partita/partita.conf"
exec_start=$(unit_value ExecStart)
case "$exec_start" in
  /usr/bin/partita\ *start\ --block*) ;;
  *) fail "the unit's ExecStart is not /usr/bin/partita ... start --block ...: $exec_start" ;;
esac

# The environment systemd gives it: Environment= lines, then the conffile's NAME=VALUE lines;
# the shipped head's port swapped for a free one.
declare -A service_env=()
while IFS= read -r assignment; do
  service_env[${assignment%%=*}]=${assignment#*=}
done < <(unit_value Environment; grep -E '^[A-Z_][A-Z0-9_]*=' "$root/etc/partita/partita.conf")
options=${service_env[PARTITA_START_OPTIONS]:-}
case "$options" in
  *--head*--listen\ 127.0.0.1:7070*) ;;
  *) fail "the conffile's PARTITA_START_OPTIONS is not a head on 127.0.0.1:7070: '$options'" ;;
esac
service_env[PARTITA_START_OPTIONS]=${options/127.0.0.1:7070/127.0.0.1:0}
home=$work/var-lib-partita  # the service user's home and working folder
mkdir -p "$home"
env_args=(HOME="$home" PATH=/usr/sbin:/usr/bin:/sbin:/bin)
for name in "${!service_env[@]}"; do env_args+=("$name=${service_env[$name]}"); done
# systemd's expansion: ${NAME} is one word, $NAME splits at white space.
command_line=${exec_start/#\/usr\/bin\/partita/$root/usr/bin/partita}
command_line=$(sed -E 's/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/"${\1}"/g' <<< "$command_line")
eval "$(for name in "${!service_env[@]}"; do printf '%s=%q\n' "$name" "${service_env[$name]}"; done)"
eval "set -- $command_line"
echo "== service: $*"
: > "$work/service.out"
(cd "$home" && exec env -i "${env_args[@]}" "$@") > "$work/service.out" 2> "$work/service.err" &
daemon=$!
address=
for _ in $(seq 600); do
  address=$(sed -n 's/^partita daemon listening on //p' "$work/service.out")
  [ -n "$address" ] && break
  running "$daemon" || { cat "$work/service.err" >&2; fail "the service exited before it listened"; }
  sleep 0.1
done
[ -n "$address" ] || { cat "$work/service.err" >&2; fail "the service did not listen within 60 s"; }
[ -f "$home/.partita/tls/ca.crt" ] || fail "the head made no cluster CA in its home's .partita/tls"
run_step status 60 env -i HOME="$home" "$root/usr/bin/partita" status --address "$address" --json
grep -q "$address" "$work/status.log" || fail "partita status did not report the head $address (see $work/status.log)"

kill -TERM "$daemon"
status=0
for _ in $(seq 300); do
  running "$daemon" || break
  sleep 0.1
done
running "$daemon" && fail "the service did not stop within 30 s of SIGTERM"
wait "$daemon" || status=$?
daemon=
[ "$status" -eq 0 ] || { cat "$work/service.err" >&2; fail "the service exited with status $status on SIGTERM"; }
echo "Debian package test passed"
