/* A system call made inside the vDSO: the kernel's vDSO clock_gettime
 * serves CLOCK_PROCESS_CPUTIME_ID by its own system call (its fallback), so
 * the call's backtrace starts in the vDSO and is unwound by the vDSO's
 * call frame information (x86-64) or frame pointers (i386's vDSO has FDEs
 * for its entry and signal trampolines only) into the C library, which
 * keeps no frame pointer, and on to the program. The program then prints
 * its own stack from vdso_caller outward, by libgcc's unwinder: the
 * oracle for the frames below the C library's. */
#include <stdio.h>
#include <time.h>
#include <unwind.h>

static FILE *out;
static int depth;

static _Unwind_Reason_Code frame(struct _Unwind_Context *ctx, void *arg) {
	(void)arg;
	fprintf(out, "frame %d 0x%lx\n", depth++, (unsigned long)_Unwind_GetIP(ctx));
	return _URC_NO_REASON;
}

__attribute__((noinline)) int vdso_caller(void) {
	struct timespec ts;
	int r = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	_Unwind_Backtrace(frame, NULL);
	return r;
}

int main(int argc, char **argv) {
	if (argc < 2 || !(out = fopen(argv[1], "w")))
		return 2;
	int r = vdso_caller();
	fclose(out);
	return r == 0 ? 0 : 1;
}
