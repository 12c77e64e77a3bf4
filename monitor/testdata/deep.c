/* A call chain built without frame pointers (gcc -O2 -fomit-frame-pointer):
 * main -> spill -> vla -> indirect -> rec x3 -> leaf -> getppid (libc).
 * Each function records its own return address on entry, so the chain a
 * backtrace of the getppid call must show is known by construction; the
 * frames differ in how their CFA is kept (rsp with pushes of callee-saved
 * registers, rbp for a variable-length array, a call through a pointer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOI __attribute__((noinline))
static void *ra[16];
static int nra;
#define RECORD() (ra[nra++] = __builtin_return_address(0))
volatile long sink;

NOI long leaf(long n) {
	RECORD();
	long p = getppid();
	sink = p;
	return p + n;
}

NOI long rec(long n) {
	RECORD();
	long r = n > 1 ? rec(n - 1) : leaf(n);
	sink = r;
	return r + 1;
}

NOI long indirect(long (*f)(long), long n) {
	RECORD();
	long r = f(n);
	sink = r;
	return r * 2;
}

NOI long vla(long n) {
	RECORD();
	char buf[n * 16 + 1]; /* a variable-length array: the frame keeps rbp */
	memset(buf, (int)n, sizeof buf);
	long (*volatile f)(long) = rec;
	long r = indirect(f, n);
	return r + buf[n];
}

NOI long spill(long a, long b, long c, long d) {
	RECORD();
	long x = a * b, y = c * d, z = a + d, w = b - c; /* live across the call: callee-saved registers */
	long r = vla(a);
	return r + x + y + z + w;
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	RECORD();
	long r = spill(3, argc, 5, 7);
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 2;
	for (int i = nra - 1; i >= 0; i--) /* innermost first */
		fprintf(f, "%p\n", ra[i]);
	fclose(f);
	return r == 0;
}
