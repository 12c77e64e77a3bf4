/* libkbt.so (linked into the program in a static build): calls back into
 * the program. */
#include "kbt.h"

__attribute__((noinline)) int kbt_lib(int n, int (*next)(int)) {
	volatile int keep = n;
	int r = next(keep + 1);
	return r + keep;
}
