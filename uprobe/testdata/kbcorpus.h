/* The corpus programs' function macros (corpus.c, corpus32.c): each k_NAME
 * runs PRE, then the probed instruction at the global label s_NAME, then POST
 * and ret, and puts {k_NAME, "NAME"} in section kbtab for main (KB_PTR: the
 * pointer directive of the target, .quad or .long). kb_main is the protocol's
 * main for a corpus without USDT probes (corpus32.c, corpus_a64.c). */
#if defined(__x86_64__) || defined(__aarch64__)
#define KB_PTR ".quad"
#else
#define KB_PTR ".long"
#endif
#define FN(name, pre, insn, post)                                          \
	__asm__(".text\n.p2align 4\n.globl k_" #name "\n.type k_" #name        \
		",@function\nk_" #name ":\n" pre "\n.globl s_" #name "\ns_" #name \
		":\n" insn "\n" post "\nret\n.size k_" #name ", .-k_" #name "\n"   \
		".pushsection kbtab,\"aw\"\n" KB_PTR " k_" #name ", kbn_" #name          \
		"\n.popsection\n.pushsection .rodata\nkbn_" #name ": .asciz \"" #name \
		"\"\n.popsection\n");
#define I(name, insn) FN(name, "", insn, "")
/* NR: probed but never run (the kernel refuses it, or it faults natively):
 * its site is n_NAME. */
#define NR(name, insn)                                                     \
	__asm__(".text\n.p2align 4\n.globl k_" #name "\n.type k_" #name        \
		",@function\nk_" #name ":\n.globl n_" #name "\nn_" #name ":\n"     \
		insn "\nret\n.size k_" #name ", .-k_" #name "\n");


struct kb_ent { long (*fn)(long); const char *name; };
extern const struct kb_ent __start_kbtab[], __stop_kbtab[];

/* kb_main: PROG NAME COUNT: "ready", a byte on stdin, COUNT calls of k_NAME,
 * "done COUNT wrong 0 last VALUE", a byte, exit 0. */
static __attribute__((unused)) int kb_main(const char *prog, int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s NAME COUNT\n", prog);
		return 2;
	}
	long (*fn)(long) = 0;
	for (const struct kb_ent *e = __start_kbtab; e < __stop_kbtab; e++)
		if (!strcmp(e->name, argv[1]))
			fn = e->fn;
	if (!fn) {
		fprintf(stderr, "%s: no function %s\n", prog, argv[1]);
		return 2;
	}
	long n = atol(argv[2]), last = 0;
	char c;
	printf("ready\n");
	fflush(stdout);
	if (read(0, &c, 1) != 1)
		return 1;
	for (long i = 0; i < n; i++)
		last = fn(i + 1);
	printf("done %ld wrong 0 last %#lx\n", n, (unsigned long)last);
	fflush(stdout);
	if (read(0, &c, 1) != 1)
		return 1;
	return 0;
}
