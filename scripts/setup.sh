#!/usr/bin/env bash
# Installs everything kboost's build and tests need on a fresh Debian machine
# (run as root, or with sudo available). Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# Debian packages: objdump and the cross objdumps (oracles), the kernel source
# (rules oracle), QEMU (real kernels, ARM user-mode execution), cpio/xz (archive
# oracles), a C compiler (demo ELF, kernel-code oracle, the uprobe test programs),
# <sys/sdt.h> (USDT sites of the uprobe corpus), gcc-multilib (the i386 build of
# that corpus), clang with libc6-dev-arm64-cross and libgcc-12-dev-arm64-cross
# (the static arm64 corpus probed in booted arm64 guests; Debian's
# gcc-aarch64-linux-gnu conflicts with gcc-multilib), the armhf counterparts
# libc6-dev-armhf-cross, libgcc-12-dev-armhf-cross and binutils-arm-linux-gnueabihf
# (clang's linker for that target; the monitor's backtrace oracle tracees of the
# armhf guest, vm/testdata/monitorbt), strace (the monitor's oracle),
# chromium (the pictures tested in a real browser, headless).
# gdb (the CFI unwinder's oracle, TestBacktraceCFI), jq (the README's JSON examples, run by TestREADMEJqExamples).
pkgs=(binutils binutils-aarch64-linux-gnu binutils-arm-linux-gnueabi gcc make bc bison flex libelf-dev libssl-dev xz-utils zstd cpio linux-source-6.1 linux-source-6.12 linux-config-6.1 linux-config-6.12 qemu-system-x86 qemu-system-arm qemu-user-static file time systemtap-sdt-dev gcc-multilib clang libc6-dev-arm64-cross libgcc-12-dev-arm64-cross libc6-dev-armhf-cross libgcc-12-dev-armhf-cross binutils-arm-linux-gnueabihf strace gdb chromium jq)
# node and npm run the HTML validator of the page tests (html-validate, pinned
# in internal/render/testdata/validator; it wants node >= 18.19, as Debian 12
# has). A node from elsewhere (nodesource bundles npm) is used as it is.
if ! command -v npm >/dev/null 2>&1; then pkgs+=(nodejs npm); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# The ARM kernels' packages (linux-image-arm64, -armmp) are fetched with
# `apt-get download pkg:arch`, which needs their architectures known to dpkg.
need_update=0
for a in arm64 armhf; do
  if ! dpkg --print-foreign-architectures | grep -qx "$a"; then
    $SUDO dpkg --add-architecture "$a"
    need_update=1
  fi
done
if [ "${#missing[@]}" -gt 0 ] || [ "$need_update" = 1 ]; then
  echo "setup: installing ${missing[*]:-nothing}; foreign architectures: $(dpkg --print-foreign-architectures | tr '\n' ' ')" >&2
  # A mirror mid-sync can fail one index (apt-get update exits 100 and keeps
  # the old lists): retry, then go on with what apt has.
  for try in 1 2 3; do
    $SUDO apt-get update -qq && break
    echo "setup: apt-get update failed (try $try); retrying" >&2
    sleep $((try * 5))
  done
  for try in 1 2 3; do
    [ "${#missing[@]}" -gt 0 ] || break
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

# The HTML validator, exactly as package-lock.json pins it (npm ci), unless
# that version is installed already.
val=internal/render/testdata/validator
want=$(sed -n 's/.*"html-validate": "\([0-9.]*\)".*/\1/p' "$val/package.json")
have=$(sed -n 's/^  "version": "\([0-9.]*\)".*/\1/p' "$val/node_modules/html-validate/package.json" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  (cd "$val" && npm ci --no-audit --no-fund --loglevel=error)
fi
