/* threads: says "ready", waits for a byte on stdin, calls work, creates a
 * thread and joins it, says "done created" (or "done failed: ERROR"), waits
 * for another byte and exits: the trial protocol, for a probe that must not
 * break the target's thread creation. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) long work(long x) { return x * 3 + 1; }
volatile long sink;

static void *run(void *a) { sink = work(2); return a; }

int main(void) {
	char c;
	printf("ready\n");
	fflush(stdout);
	if (read(0, &c, 1) != 1)
		return 1;
	sink = work(1);
	pthread_t t;
	int e = pthread_create(&t, 0, run, 0);
	if (e)
		printf("done failed: %s\n", strerror(e));
	else {
		pthread_join(t, 0);
		printf("done created\n");
	}
	fflush(stdout);
	if (read(0, &c, 1) != 1)
		return 1;
	return 0;
}
