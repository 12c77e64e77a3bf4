/*
 * kboost's embedded demo: a few functions compiled like kernel code
 * (-pg -mfentry: every traced function starts with `call __fentry__`, the ftrace
 * site; -fcf-protection=branch: endbr64 first), so that `kboost audit` with no
 * file shows every verdict: ftrace sites, emulated branches, single-stepped and
 * boosted instructions, and what optprobes may cover.
 *
 * Build: ./build.sh beside this file; the result, demo.elf, is embedded in kboost
 * (package internal/demo) and audited by `kboost audit` with no file.
 */
typedef unsigned long u64;

__attribute__((no_instrument_function)) void __fentry__(void) {}

static u64 counter;
u64 table[16];

__attribute__((noinline)) u64 add_counter(u64 v)
{
	counter += v;            /* RIP-relative load/store */
	return counter;
}

__attribute__((noinline)) u64 sum_table(int n)
{
	u64 s = 0;
	for (int i = 0; i < n && i < 16; i++)   /* jcc */
		s += table[i];
	return s + add_counter(s);              /* call */
}

__attribute__((noinline)) u64 save_flags(void)
{
	u64 flags;
	asm volatile("pushf; pop %0" : "=r"(flags));   /* pushf: emulated */
	return flags;
}

__attribute__((noinline, no_instrument_function)) u64 untraced(u64 x)
{
	return x * 7 + 3;   /* notrace: no __fentry__ call */
}

__attribute__((noinline)) u64 odd_instructions(u64 x)
{
	asm volatile("nopl 0x0(%%rax,%%rax,1)\n\t"
		     "lock incq %0\n\t"
		     "movabs $0x1122334455667788, %%rax\n\t"
		     "cpuid\n\t"
		     "rdtsc\n\t"
		     : "+m"(counter) : : "rax", "rbx", "rcx", "rdx");
	return x ^ counter;
}

int main(void)
{
	return (int)(sum_table(4) + save_flags() + untraced(1) + odd_instructions(2));
}
