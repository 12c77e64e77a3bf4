/* The tracee of the monitor's guest tests (static, arm64 here): opens the
 * path it is given (the monitor denies it), forks a child that executes this
 * program again and exits 3, waits for it, and prints what happened on
 * stdout, with the system call numbers of its own headers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc > 1 && !strcmp(argv[1], "child")) {
		printf("child %s\n", argc > 2 ? argv[2] : "");
		return 3;
	}
	if (argc < 2)
		return 2;
	printf("nr openat=%d execve=%d exit_group=%d\n", SYS_openat, SYS_execve, SYS_exit_group);
	errno = 0;
	int fd = open(argv[1], O_RDONLY);
	printf("open %s: %s\n", argv[1], fd >= 0 ? "ok" : strerror(errno));
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		execl("/proc/self/exe", argv[0], "child", "exec", (char *)0);
		_exit(127);
	}
	int st = 0;
	waitpid(p, &st, 0);
	printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
