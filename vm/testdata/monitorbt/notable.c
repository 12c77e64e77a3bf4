/* Built without unwind tables (-fno-asynchronous-unwind-tables
 * -fno-unwind-tables) but with frame pointers: no FDE covers notable, so
 * libgcc's walk ends at its frame and kboost's crosses it by its frame
 * record. It prints what the compiler says its own return address and its
 * caller's are (__builtin_return_address 0 and 1, through the frame
 * records): the monitor's two frames after the one in notable. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kbt.h"

__attribute__((noinline)) int notable(int n) {
	char line[96];
	snprintf(line, sizeof line, "notable ret0=0x%lx ret1=0x%lx\n", (unsigned long)__builtin_return_address(0),
	         (unsigned long)__builtin_return_address(1));
	if (write(1, line, strlen(line)) < 0)
		return -1;
	int r = chain(n);
	return r + 1;
}
