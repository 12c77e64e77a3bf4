#!/usr/bin/env bash
# Installs everything kboost's build and tests need on a fresh Debian machine
# (run as root, or with sudo available). Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# Debian packages: objdump (oracle), the kernel source (rules oracle), QEMU (real
# kernels), cpio/xz (archive oracles), a C compiler (demo ELF, kernel-code oracle).
pkgs=(binutils gcc make bc bison flex libelf-dev libssl-dev xz-utils zstd cpio linux-source-6.1 linux-source-6.12 linux-config-6.1 qemu-system-x86 qemu-user-static file time)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  # A mirror mid-sync can fail one index (apt-get update exits 100 and keeps
  # the old lists): retry, then go on with what apt has.
  for try in 1 2 3; do
    $SUDO apt-get update -qq && break
    echo "setup: apt-get update failed (try $try); retrying" >&2
    sleep $((try * 5))
  done
  for try in 1 2 3; do
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null && break
    if [ "$try" = 3 ]; then echo "setup: apt-get install ${missing[*]} failed" >&2; exit 1; fi
    sleep $((try * 5))
  done
fi

if ! command -v go >/dev/null 2>&1; then
  if [ -x /usr/local/go/bin/go ]; then export PATH=$PATH:/usr/local/go/bin
  else echo "setup: Go is not installed (need Go >= 1.24 on PATH)" >&2; exit 1; fi
fi
go mod download
