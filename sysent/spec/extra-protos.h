/*
 * kboost's own declarations, in the kernel's syntax, of entry points that
 * include/linux/syscalls.h does not declare (arch-specific ones) or declares
 * per CONFIG_ branch (clone: the last two swap on CLONE_BACKWARDS
 * architectures, i386 and arm; named neutrally here).
 * Read by `go run ./sysent/gen -extract`; these win over syscalls.h.
 */
asmlinkage long sys_mmap(unsigned long addr, unsigned long len, unsigned long prot, unsigned long flags, unsigned long fd, unsigned long off);
asmlinkage long sys_arch_prctl(int option, unsigned long arg2);
asmlinkage long sys_iopl(unsigned int level);
asmlinkage long sys_modify_ldt(int func, void __user *ptr, unsigned long bytecount);
asmlinkage long sys_rt_sigreturn(void);
asmlinkage long sys_clone(unsigned long flags, unsigned long newsp, int __user *parent_tid, unsigned long arg3, unsigned long arg4);
