// kboost bench's probe workload: "loop N" calls tick() N times; tick is
// seven bytes of boostable instructions before its ret, so every probe
// mechanism applies to its first instruction.
#include <stdlib.h>
#include <string.h>

__attribute__((noinline, naked)) long tick(long x) {
	__asm__ volatile(
		"mov %rdi,%rax\n\t"
		"add $0x1,%rax\n\t"
		"ret\n\t");
}

int main(int argc, char **argv) {
	if (argc < 3 || strcmp(argv[1], "loop") != 0)
		return 2;
	long n = atol(argv[2]), acc = 0;
	for (long i = 0; i < n; i++)
		acc = tick(acc);
	return acc != n;
}
