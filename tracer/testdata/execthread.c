// Tracee for tracer's tests: "execthread K" forks a child (not the
// tracer's own child: wait4 reports its tasks newest first) in which a
// thread executes the program again at once with K-1, K times, while the
// main thread waits (the exec kills it, maybe in its clone event stop);
// the parent prints "done" and the child's exit status.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static char **args;

static void *again(void *arg) {
	char k[16];
	snprintf(k, sizeof k, "%d", atoi(args[1]) - 1);
	char *argv[] = {args[0], k, 0};
	execv("/proc/self/exe", argv);
	_exit(4);
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	if (argc == 3) { // the first: fork the chain, wait for it
		pid_t c = fork();
		if (c == 0) {
			char *chain[] = {argv[0], argv[1], 0};
			execv("/proc/self/exe", chain);
			_exit(4);
		}
		int st;
		waitpid(c, &st, 0);
		printf("done %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		return 0;
	}
	if (atoi(argv[1]) <= 0)
		return 0;
	args = argv;
	pthread_t t;
	pthread_create(&t, 0, again, 0);
	for (;;)
		pause();
}
