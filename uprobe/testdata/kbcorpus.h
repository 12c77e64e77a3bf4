/* The corpus programs' function macros (corpus.c, corpus32.c): each k_NAME
 * runs PRE, then the probed instruction at the global label s_NAME, then POST
 * and ret, and puts {k_NAME, "NAME"} in section kbtab for main (KB_PTR: the
 * pointer directive of the target, .quad or .long). */
#ifdef __x86_64__
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

