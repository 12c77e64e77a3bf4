// Tracee for ptprobe's tests and scripts/bench-trace.sh: probed functions
// with known call counts. Usage: target MODE N [THREADS]
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile long sink;
static long table[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};

// Leaf with a frame, a RIP-relative load and arithmetic.
__attribute__((noinline)) long work(long x) {
	long r = x * 3 + table[x & 15];
	if (r & 1)
		r ^= 0x55;
	return r;
}

long flat(long x);

// work's computation again, never probed: the reference spin checks against.
__attribute__((noinline)) long work_ref(long x) {
	long r = x * 3 + table[x & 15];
	if (r & 1)
		r ^= 0x55;
	return r;
}

// spinner calls work for ever and ends the process with status 3 if a
// result is ever wrong (a corrupted probe).
static void *spinner(void *arg) {
	for (long i = 0;; i++) {
		if (work(i) != work_ref(i) || flat(i) != (((i + 7) * 3 + i) ^ 0x11)) {
			write(2, "corrupt\n", 8);
			_exit(3);
		}
	}
	return 0;
}

// Starts with a branch-free run of boostable instructions (jump target).
__attribute__((noinline, naked)) long flat(long x) {
	__asm__ volatile(
		"lea 0x7(%rdi),%rax\n\t"
		"imul $0x3,%rax,%rax\n\t"
		"add %rdi,%rax\n\t"
		"xor $0x11,%rax\n\t"
		"ret\n\t");
}

// The first instruction is a relative jump (emulated), the loop makes the
// second a branch target (no jump optimization there).
__attribute__((noinline, naked)) long branchy(long x) {
	__asm__ volatile(
		"jmp 1f\n\t"
		"1: mov %rdi,%rax\n\t"
		"2: dec %rdi\n\t"
		"jg 2b\n\t"
		"ret\n\t");
}

// A tiny function for the per-hit cost (called in a tight loop): seven
// bytes of boostable instructions before its ret, so every mode applies.
__attribute__((noinline, naked)) long tick(long x) {
	__asm__ volatile(
		"mov %rdi,%rax\n\t"
		"add $0x1,%rax\n\t"
		"ret\n\t");
}

static long n;

static void *runner(void *arg) {
	long acc = 0;
	for (long i = 0; i < n; i++)
		acc += work(i) + flat(i) + branchy(i & 7);
	return (void *)acc;
}

static void *execer(void *arg) {
	char **argv = arg;
	for (long i = 0; i < n; i++)
		sink += work(i);
	char *args[] = {argv[0], "calls", argv[2], "1", 0};
	execv("/proc/self/exe", args);
	_exit(4);
}

// stress: the correctness suite's threaded case in one process tree.
//   - THREADS threads call work, flat and branchy N times each at once;
//     every 64 calls each sends the process a queued real-time signal,
//     whose handler calls work once (signals reach running threads and
//     threads stopped in probes);
//   - a fork child stops the process (SIGSTOP), queues a signal to it while
//     it is stopped, and continues it (SIGCONT);
//   - a clone child (no CLONE_VM, no exec) calls work N times;
//   - a fork child spinning in flat on two threads is SIGKILLed (a tracee
//     killed in the middle of its probes);
//   - a fork child runs "execthread N": a thread calls work N times and
//     executes the binary again, which calls it N more times.
// It prints the calls of work it made (the probe's exact count) and what
// every child reported, the same with and without kboost.
static volatile long handled;
static long sent;

static void onsig(int sig) {
	sink += work(sig);
	__atomic_add_fetch(&handled, 1, __ATOMIC_SEQ_CST);
}

static void *stress_runner(void *arg) {
	long acc = 0;
	for (long i = 0; i < n; i++) {
		acc += work(i) + flat(i) + branchy(i & 7);
		if (i % 64 == 63) {
			union sigval v = {0};
			if (sigqueue(getpid(), SIGRTMIN, v) == 0)
				__atomic_add_fetch(&sent, 1, __ATOMIC_SEQ_CST);
		}
	}
	return (void *)acc;
}

static void *flat_spinner(void *arg) {
	for (long i = 0;; i++)
		sink += flat(i);
	return 0;
}

static int clone_child(void *arg) {
	long acc = 0;
	for (long i = 0; i < n; i++)
		acc += work(i);
	_exit(acc & 0x7f);
}

static void pause_ms(long ms) {
	struct timespec ts = {0, ms * 1000000};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static int stress(int threads, char *self) {
	struct sigaction sa = {0};
	sa.sa_handler = onsig;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGRTMIN, &sa, 0);
	pid_t parent = getpid();
	pid_t stopper = fork();
	if (stopper == 0) { // SIGSTOP the parent, signal it while stopped, SIGCONT
		pause_ms(2);
		kill(parent, SIGSTOP);
		pause_ms(2);
		union sigval v = {0};
		sigqueue(parent, SIGRTMIN, v);
		pause_ms(2);
		kill(parent, SIGCONT);
		_exit(0);
	}
	pid_t victim = fork();
	if (victim == 0) { // killed mid-probe
		pthread_t t;
		pthread_create(&t, 0, flat_spinner, 0);
		flat_spinner(0);
	}
	pid_t execer_pid = fork();
	if (execer_pid == 0) {
		char nbuf[32];
		snprintf(nbuf, sizeof nbuf, "%ld", n);
		execl("/proc/self/exe", self, "execthread", nbuf, (char *)0);
		_exit(5);
	}
	static char stack[1 << 16];
	pid_t cl = clone(clone_child, stack + sizeof stack, SIGCHLD, 0);
	pthread_t t[64];
	long total = 0;
	for (int i = 0; i < threads && i < 64; i++)
		pthread_create(&t[i], 0, stress_runner, 0);
	for (int i = 0; i < threads && i < 64; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)r;
	}
	int st, cst, vst, est;
	waitpid(execer_pid, &est, 0);
	waitpid(stopper, &st, 0);
	sent++; // the stopper's
	while (handled < sent)
		pause_ms(1);
	waitpid(cl, &cst, 0);
	kill(victim, SIGKILL);
	waitpid(victim, &vst, 0);
	long calls = (long)threads * n + handled;
	printf("total %ld work calls %ld (clone child's %ld, exec child's %ld) stopper %d clone %d exec %d victim %s %d\n", total, calls, n, 2 * n,
	       WEXITSTATUS(st), WEXITSTATUS(cst), WEXITSTATUS(est), WIFSIGNALED(vst) ? "killed" : "exited", WIFSIGNALED(vst) ? WTERMSIG(vst) : WEXITSTATUS(vst));
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: target calls|loop|spin|exec|execthread|fork|vfork|die|sleep|stress N [THREADS]\n");
		return 2;
	}
	n = atol(argv[2]);
	if (strcmp(argv[1], "loop") == 0) {
		long acc = 0;
		for (long i = 0; i < n; i++)
			acc = tick(acc);
		return acc != n;
	}
	if (strcmp(argv[1], "sleep") == 0) { // probed while running: --pid
		printf("%d\n", getpid());
		fflush(stdout);
		for (long i = 0;; i++) {
			sink += work(i);
			usleep(1000);
		}
	}
	if (strcmp(argv[1], "spin") == 0) { // N threads in work for ever: probed while running
		pthread_t t;
		for (long i = 0; i < n; i++)
			pthread_create(&t, 0, spinner, 0);
		printf("%d\n", getpid());
		fflush(stdout);
		for (;;)
			pause();
	}
	if (strcmp(argv[1], "exec") == 0) // the same on the only thread
		execer(argv);
	if (strcmp(argv[1], "execthread") == 0) { // a thread calls work N times, then execs "calls N 1"
		pthread_t t;
		pthread_create(&t, 0, execer, argv);
		for (;;)
			pause();
	}
	if (strcmp(argv[1], "fork") == 0 || strcmp(argv[1], "vfork") == 0) { // parent and child each call work N times
		pid_t c = argv[1][0] == 'v' ? vfork() : fork();
		long acc = 0;
		for (long i = 0; i < n; i++)
			acc += work(i);
		if (c == 0)
			_exit(acc & 0x7f);
		int st;
		waitpid(c, &st, 0);
		printf("%ld %d\n", acc, WEXITSTATUS(st));
		return 0;
	}
	if (strcmp(argv[1], "stress") == 0)
		return stress(argc > 3 ? atoi(argv[3]) : 8, argv[0]);
	if (strcmp(argv[1], "die") == 0) {
		for (long i = 0; i < n; i++)
			sink += work(i);
		kill(getpid(), SIGKILL);
	}
	int threads = argc > 3 ? atoi(argv[3]) : 1;
	pthread_t t[64];
	long total = 0;
	for (int i = 0; i < threads && i < 64; i++)
		pthread_create(&t[i], 0, runner, 0);
	for (int i = 0; i < threads && i < 64; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)r;
	}
	printf("%ld\n", total);
	return 0;
}
