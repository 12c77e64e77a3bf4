/* Tracee for the one-stop-per-call test: argv[1] getppid calls, then the
 * parent pid it saw, on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 0;
	long seen = 0;
	for (int i = 0; i < n; i++)
		seen = syscall(SYS_getppid);
	printf("%ld\n", seen);
	return 0;
}
