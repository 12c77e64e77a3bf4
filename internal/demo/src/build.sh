#!/bin/sh
# Rebuilds ../demo.elf from demo.c. The flags mimic an x86-64 kernel build.
set -e
cd "$(dirname "$0")"
gcc -O2 -fno-pie -no-pie -pg -mfentry -mrecord-mcount -fcf-protection=branch -fno-asynchronous-unwind-tables \
    -nostdlib -static -Wl,-e,main -Wl,--build-id=none -o ../demo.elf demo.c
