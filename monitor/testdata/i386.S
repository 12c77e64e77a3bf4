/* A static i386 tracee without libc (the host may have no 32-bit libc):
 * open("/etc/hostname") and report its result through write(2), then
 * exit(0). int 0x80 with the i386 numbers: open 5, write 4, exit 1. */
	.globl _start
	.text
_start:
	movl $5, %eax
	movl $path, %ebx
	xorl %ecx, %ecx
	int $0x80
	movl $ok, %ecx
	testl %eax, %eax
	jns 1f
	movl $denied, %ecx
1:	movl $4, %eax
	movl $1, %ebx
	movl $3, %edx
	int $0x80
	movl $1, %eax
	xorl %ebx, %ebx
	int $0x80
	.data
path:	.asciz "/etc/hostname"
ok:	.ascii "ok\n"
denied:	.ascii "no\n"
