/* Tracee for kboost's tracer and monitor tests: each mode exercises one
 * thing a tracer must get right and writes what it saw to argv[2], so the
 * run with and without kboost can be compared. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static FILE *out;
static char *self;
static volatile sig_atomic_t hits;

static void *worker(void *arg) {
	int fd = open("/dev/null", O_WRONLY);
	write(fd, "x", 1);
	close(fd);
	return arg;
}

static void *exec_thread(void *arg) {
	(void)arg;
	fflush(out);
	execl(self, self, "hello", (char *)getenv("TRACEE_OUT"), (char *)NULL);
	return NULL;
}

static int clone_fn(void *arg) {
	(void)arg;
	return getppid() > 0 ? 5 : 6;
}

static void on_usr1(int sig) { (void)sig; hits++; }

/* A handler on an alternate signal stack (far from the thread's own) whose
 * call's backtrace goes through the signal frame back to main's stack. */
static void on_usr2_onstack(int sig) {
	(void)sig;
	hits++;
	syscall(SYS_getppid);
}

/* A handler that makes a system call of its own while the call it
 * interrupted waits to be restarted. */
static int null_fd = -1;
static void on_alrm(int sig) {
	(void)sig;
	hits++;
	write(null_fd, "a", 1);
}

/* mtsignals: threads making calls (a blocking read among them) while
 * the main thread signals them: SA_RESTART handlers with calls of their
 * own interrupt and restart the threads' calls at any point. */
enum { MT_THREADS = 6, MT_ROUNDS = 100 };
static int mt_pipe[MT_THREADS][2];
static volatile sig_atomic_t mt_hits;
static void on_mt(int sig) {
	(void)sig;
	mt_hits++;
	write(null_fd, "h", 1);
}
static void *mt_worker(void *arg) {
	long i = (long)arg, got = 0;
	char c;
	for (int r = 0; r < MT_ROUNDS; r++) {
		write(null_fd, "x", 1);
		syscall(SYS_getppid);
		if (read(mt_pipe[i][0], &c, 1) == 1)
			got++;
	}
	return (void *)got;
}
static void mtsignals(void) {
	null_fd = open("/dev/null", O_WRONLY);
	struct sigaction sa = {.sa_handler = on_mt, .sa_flags = SA_RESTART};
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t t[MT_THREADS];
	for (long i = 0; i < MT_THREADS; i++) {
		if (pipe(mt_pipe[i]) < 0 || pthread_create(&t[i], NULL, mt_worker, (void *)i))
			return;
	}
	for (int r = 0; r < MT_ROUNDS; r++)
		for (int i = 0; i < MT_THREADS; i++) {
			pthread_kill(t[i], SIGUSR1);
			write(mt_pipe[i][1], "p", 1);
		}
	long got = 0;
	for (int i = 0; i < MT_THREADS; i++) {
		void *g;
		pthread_join(t[i], &g);
		got += (long)g;
	}
	fprintf(out, "mtsignals threads=%d read=%ld\n", MT_THREADS, got);
}

/* restart: a read restarted after a SA_RESTART handler (the kernel moves
 * the thread back onto its system call instruction), a read failed with
 * EINTR by a handler without SA_RESTART, and a nanosleep resumed by
 * restart_syscall after an ignored SIGCHLD. */
static void restart(void) {
	int p[2];
	if (pipe(p) < 0)
		return;
	null_fd = open("/dev/null", O_WRONLY);
	struct sigaction sa = {0};
	sa.sa_handler = on_alrm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	fflush(out);
	pid_t c = fork();
	if (c == 0) {
		usleep(300000);
		write(p[1], "restarted", 9);
		_exit(0);
	}
	struct itimerval it = {{0, 0}, {0, 50000}};
	setitimer(ITIMER_REAL, &it, NULL);
	char b[16] = {0};
	ssize_t n = read(p[0], b, sizeof b - 1);
	fprintf(out, "read=%zd data=%s handled=%d\n", n, b, (int)hits);
	waitpid(c, NULL, 0);
	sa.sa_flags = 0;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	errno = 0;
	n = read(p[0], b, sizeof b - 1);
	fprintf(out, "read=%zd eintr=%d handled=%d\n", n, errno == EINTR, (int)hits);
	fflush(out);
	c = fork();
	if (c == 0)
		_exit(3);
	struct timespec ts = {0, 200000000}, rem = {0, 0};
	int r = nanosleep(&ts, &rem);
	int st = 0;
	waitpid(c, &st, 0);
	fprintf(out, "nanosleep=%d child=%d\n", r, WEXITSTATUS(st));
}

/* sigrestart: a restarted read interrupted again, by a handler whose own
 * read (from another call site) is interrupted and restarted in turn (the
 * thread's calls nest in its handlers). A child sends the signals and writes the data in order,
 * with pauses long enough for each read to block first. */
static int inner_fd = -1;
static char inner_data[16];
static volatile sig_atomic_t inner_n = -1, inner_returns, usr2_hits;
static void on_usr2(int sig) { (void)sig; usr2_hits++; }
static void on_usr1_read(int sig) {
	(void)sig;
	long n; /* a call site of its own, in this function (tracee.c is x86-64 only) */
	__asm__ volatile("syscall"
			 : "=a"(n)
			 : "0"((long)SYS_read), "D"((long)inner_fd), "S"(inner_data), "d"((long)sizeof inner_data - 1)
			 : "rcx", "r11", "memory");
	inner_n = n;
	inner_returns++;
}

static void sigrestart(void) {
	int p1[2], p2[2];
	if (pipe(p1) < 0 || pipe(p2) < 0)
		return;
	inner_fd = p2[0];
	struct sigaction sa = {0};
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = on_usr1_read;
	sigaction(SIGUSR1, &sa, NULL);
	fflush(out);
	pid_t parent = getpid(), c = fork();
	if (c == 0) {
		struct timespec gap = {0, 60000000};
		nanosleep(&gap, NULL);
		kill(parent, SIGUSR2); /* the outer read is restarted */
		nanosleep(&gap, NULL);
		kill(parent, SIGUSR1); /* interrupted again: the handler reads */
		nanosleep(&gap, NULL);
		kill(parent, SIGUSR2); /* the handler's read is restarted */
		nanosleep(&gap, NULL);
		write(p2[1], "in", 2);
		nanosleep(&gap, NULL);
		write(p1[1], "outer", 5);
		_exit(0);
	}
	char b[16] = {0};
	ssize_t n = read(p1[0], b, sizeof b - 1);
	int st = 0;
	waitpid(c, &st, 0);
	fprintf(out, "outer read=%zd data=%s inner read=%d data=%s returns=%d usr2=%d\n", n, b, (int)inner_n,
		inner_data, (int)inner_returns, (int)usr2_hits);
}

/* Frame-pointer chain for --backtrace: inner makes the openat itself
 * (libc's open uses rbp as a general register, and kboost has no CFI
 * unwinder yet), inner is called from outer; both keep frame pointers. */
__attribute__((noinline)) void touch(long v) { __asm__ volatile("" ::"r"(v) : "memory"); }

/* Not a leaf (it calls touch), so GCC gives it a frame. */
__attribute__((noinline)) static int inner(const char *p) {
	long fd;
	register long r10 __asm__("r10") = 0;
	__asm__ volatile("syscall"
			 : "=a"(fd)
			 : "0"(257L), "D"(-100L), "S"(p), "d"((long)O_RDONLY), "r"(r10)
			 : "rcx", "r11", "memory");
	touch(fd);
	return (int)fd;
}

__attribute__((noinline)) int outer(const char *p) {
	int fd = inner(p);
	__asm__ volatile("" ::: "memory");
	return fd + 1;
}

int main(int argc, char **argv) {
	if (argc < 3)
		return 2;
	self = argv[0];
	out = fopen(argv[2], "a");
	if (!out)
		return 2;
	const char *m = argv[1];
	int st = 0;
	if (!strcmp(m, "hello")) {
		fprintf(out, "hello from %s\n", m);
	} else if (!strcmp(m, "threads")) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, worker, (void *)(long)i);
		long sum = 0;
		for (int i = 0; i < 4; i++) {
			void *r;
			pthread_join(t[i], &r);
			sum += (long)r;
		}
		fprintf(out, "threads joined sum=%ld\n", sum);
	} else if (!strcmp(m, "fork")) {
		fflush(out);
		pid_t p = fork();
		if (p == 0)
			_exit(getpid() > 0 ? 3 : 4);
		waitpid(p, &st, 0);
		fprintf(out, "fork child status=%d\n", WEXITSTATUS(st));
	} else if (!strcmp(m, "vfork")) {
		fflush(out);
		pid_t p = vfork();
		if (p == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		waitpid(p, &st, 0);
		fprintf(out, "vfork child status=%d\n", WEXITSTATUS(st));
	} else if (!strcmp(m, "clone")) {
		static char stack[65536];
		pid_t p = clone(clone_fn, stack + sizeof stack, SIGCHLD, NULL);
		waitpid(p, &st, 0);
		fprintf(out, "clone child status=%d\n", WEXITSTATUS(st));
	} else if (!strcmp(m, "execthread")) {
		pthread_t t;
		setenv("TRACEE_OUT", argv[2], 1);
		fprintf(out, "before exec\n");
		pthread_create(&t, NULL, exec_thread, NULL);
		pause();
	} else if (!strcmp(m, "signals")) {
		signal(SIGUSR1, on_usr1);
		raise(SIGUSR1);
		kill(getpid(), SIGUSR1);
		fprintf(out, "signals handled=%d\n", (int)hits);
	} else if (!strcmp(m, "sigstop")) {
		fflush(out);
		pid_t p = fork();
		if (p == 0) {
			for (int i = 0; i < 20; i++)
				usleep(5000);
			_exit(7);
		}
		kill(p, SIGSTOP);
		waitpid(p, &st, WUNTRACED);
		fprintf(out, "stopped=%d sig=%d\n", WIFSTOPPED(st), WIFSTOPPED(st) ? WSTOPSIG(st) : 0);
		kill(p, SIGCONT);
		waitpid(p, &st, WCONTINUED);
		fprintf(out, "continued=%d\n", WIFCONTINUED(st));
		waitpid(p, &st, 0);
		fprintf(out, "exited=%d status=%d\n", WIFEXITED(st), WEXITSTATUS(st));
	} else if (!strcmp(m, "deny")) {
		errno = 0;
		int fd = open("/etc/hostname", O_RDONLY);
		fprintf(out, "open=%d errno=%d\n", fd, errno);
		fd = open("/dev/null", O_RDONLY);
		fprintf(out, "after open ok=%d\n", fd >= 0);
	} else if (!strcmp(m, "nested")) {
		int fd = outer("/etc/hostname");
		fprintf(out, "nested ok=%d\n", fd > 0);
	} else if (!strcmp(m, "ticks")) {
		for (int i = 0; i < 40; i++) {
			usleep(10000);
			fprintf(out, "tick %d\n", i);
			fflush(out);
		}
	} else if (!strcmp(m, "killed")) {
		pthread_t t;
		pthread_create(&t, NULL, worker, NULL);
		pthread_join(t, NULL);
		fprintf(out, "about to die\n");
		fflush(out);
		kill(getpid(), SIGKILL);
	} else if (!strcmp(m, "restart")) {
		restart();
	} else if (!strcmp(m, "sigrestart")) {
		sigrestart();
	} else if (!strcmp(m, "mtsignals")) {
		mtsignals();
	} else if (!strcmp(m, "altstack")) {
		stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16};
		struct sigaction sa = {.sa_handler = on_usr2_onstack, .sa_flags = SA_ONSTACK};
		if (!ss.ss_sp || sigaltstack(&ss, NULL) < 0 || sigaction(SIGUSR2, &sa, NULL) < 0)
			return 3;
		for (int i = 0; i < 3; i++) {
			raise(SIGUSR2);
			getppid();
		}
		fprintf(out, "altstack handled=%d\n", (int)hits);
	} else if (!strcmp(m, "workload")) {
		pthread_t t[3];
		for (int i = 0; i < 3; i++)
			pthread_create(&t[i], NULL, worker, NULL);
		for (int i = 0; i < 3; i++)
			pthread_join(t[i], NULL);
		fflush(out);
		pid_t p = fork();
		if (p == 0) {
			int fd = open("/etc/passwd", O_RDONLY);
			char b[128];
			read(fd, b, sizeof b);
			close(fd);
			_exit(0);
		}
		waitpid(p, &st, 0);
		fprintf(out, "workload done\n");
	} else {
		return 2;
	}
	fclose(out);
	return 0;
}
