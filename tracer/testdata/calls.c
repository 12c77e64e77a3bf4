/* Tracee for the one-stop-per-call tests: argv[1] getppid calls, then the
 * parent pid it saw, on stdout. With "spawn K" after it, it first starts K
 * copies of itself (fork or vfork, then exec at once) from a child of its
 * own and prints how many ended normally with status 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 0;
	if (argc > 3 && !strcmp(argv[2], "spawn")) {
		/* The spawning is done by a child: the tracer's wait4 looks at
		 * its own children (the root) before the tasks it only traces. */
		pid_t mid = fork();
		if (mid > 0) {
			int st = 0;
			waitpid(mid, &st, 0);
			return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
		}
		int k = atoi(argv[3]), ok = 0;
		for (int i = 0; i < k; i++) {
			pid_t p = i % 2 ? vfork() : fork();
			if (p == 0) {
				execl(argv[0], argv[0], argv[1], (char *)NULL);
				_exit(127);
			}
			int st = 0;
			if (p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0)
				ok++;
		}
		printf("spawned %d ok\n", ok);
		fflush(stdout);
		return 0;
	}
	long seen = 0;
	for (int i = 0; i < n; i++)
		seen = syscall(SYS_getppid);
	printf("%ld\n", seen);
	return 0;
}
