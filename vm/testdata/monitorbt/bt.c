/* The backtrace oracle of the monitor's guest trial (vm package,
 * TestOracleMonitorGuestARM64). A chain of calls, some through code built
 * with -fomit-frame-pointer (omit.c) and one through a shared library
 * (lib.c, libkbt.so, where the build is dynamic), and with the argument
 * "notable" through a function without unwind tables (notable.c), reaches leaf, which
 * unwinds its own stack with libgcc's _Unwind_Backtrace, prints each frame
 * and then calls getppid, the program's only call of it: kboost monitor's
 * backtrace of that call must name the same return addresses.
 *
 * Each line "frame I pc=0x.. fn=0x.. sym=NAME+0xOFF" is one frame from
 * leaf's on:
 * pc as _Unwind_GetIP gives it (a return address, but leaf's own), fn the
 * start of its function by its unwind entry (_Unwind_GetRegionStart), NAME
 * and OFF what dladdr finds for pc ("-+0x0": nothing, as in a static
 * build; OFF is pc's offset from the symbol). "leaf=0x.." is
 * leaf's own address. "end=stack": the walk reached the outermost frame
 * (its return address undefined or 0); "end=other N": it stopped at a
 * frame it could not unwind (ARM EHABI's _start is EXIDX_CANTUNWIND), whose
 * return address it does not print. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

#include "kbt.h"

struct walk {
	int n, started, end;
	char buf[4096];
	size_t len;
};

static void emit(struct walk *w, const char *s) {
	size_t l = strlen(s);
	if (w->len + l < sizeof w->buf) {
		memcpy(w->buf + w->len, s, l);
		w->len += l;
	}
}

static _Unwind_Reason_Code frame(struct _Unwind_Context *ctx, void *arg) {
	struct walk *w = arg;
	uintptr_t pc = _Unwind_GetIP(ctx);
	if (pc == 0) {
		w->end = 1; /* _start's caller: none */
		return _URC_END_OF_STACK;
	}
	/* the function start of the unwind entry libgcc found for the frame
	 * (the FDE's, or ARM EHABI's index entry) */
	void *fn = (void *)_Unwind_GetRegionStart(ctx);
	if (!w->started) {
		if (fn != (void *)leaf)
			return _URC_NO_REASON; /* _Unwind_Backtrace's own frame(s) */
		w->started = 1;
	}
	const char *sym = "-";
	unsigned long off = 0;
	Dl_info di;
	if (dladdr((void *)(pc - 1), &di) && di.dli_sname && di.dli_saddr) {
		sym = di.dli_sname;
		uintptr_t start = (uintptr_t)di.dli_saddr;
#ifdef __arm__
		start &= ~(uintptr_t)1; /* a Thumb function's symbol value has the Thumb bit set */
#endif
		off = pc - start;
	}
	char line[256];
	snprintf(line, sizeof line, "frame %d pc=0x%lx fn=0x%lx sym=%s+0x%lx\n", w->n++, (unsigned long)pc,
	         (unsigned long)(uintptr_t)fn, sym, off);
	emit(w, line);
	return _URC_NO_REASON;
}

__attribute__((noinline)) int leaf(int n) {
	static struct walk w;
	char line[64];
	snprintf(line, sizeof line, "leaf=0x%lx\n", (unsigned long)(uintptr_t)leaf);
	emit(&w, line);
	_Unwind_Reason_Code rc = _Unwind_Backtrace(frame, &w);
	snprintf(line, sizeof line, w.end || rc == _URC_END_OF_STACK ? "end=stack\n" : "end=other %d\n", (int)rc);
	emit(&w, line);
	if (write(1, w.buf, w.len) != (ssize_t)w.len)
		return -1;
	pid_t p = getppid();
	return p > 0 ? n + 1 : -1;
}

__attribute__((noinline)) static int outer(int n) {
	int r = middle(n + 1);
	return r + 1;
}

__attribute__((noinline)) int chain(int n) {
	int r = outer(n);
	return r + 1;
}

static volatile int in_handler;

static void handler(int sig) {
	in_handler = outer(sig);
}

/* With the argument "signal" the chain runs in a SIGUSR1 handler: the
 * stack then goes through the kernel's signal frame (on arm64 the vDSO's
 * sigreturn trampoline) into raise. */
int main(int argc, char **argv) {
	int r;
	if (argc > 1 && !strcmp(argv[1], "signal")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = handler;
		if (sigaction(SIGUSR1, &sa, 0) != 0 || raise(SIGUSR1) != 0)
			return 2;
		r = in_handler;
	} else if (argc > 1 && !strcmp(argv[1], "notable"))
		r = notable(1);
	else
		r = outer(1);
	printf("result %d\n", r);
	return r > 0 ? 0 : 1;
}
