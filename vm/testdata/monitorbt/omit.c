/* Built with -fomit-frame-pointer: these frames keep no frame record. */
#include "kbt.h"

__attribute__((noinline)) int inner(int n) {
	volatile int pad[4] = {n, n, n, n};
	int r = leaf(pad[1] + 1);
	return r + pad[2];
}

__attribute__((noinline)) int middle(int n) {
	int r = kbt_lib(n + 1, inner);
	return r * 2;
}
