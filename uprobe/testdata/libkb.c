/* A shared library for the file-offset test: kb_lib is probed in libkb.so. */
__attribute__((noinline)) long kb_lib(long x) { return x * 2 + 1; }
