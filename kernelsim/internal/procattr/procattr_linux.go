package procattr

import (
	"os"
	"syscall"
)

// Sandboxed is how every sandboxed runner starts (the ptrace sandbox and
// the qemu-user ones): killed with kboost, in its own process group, PID,
// network and IPC namespaces, as nobody (as root) or in a user namespace.
func Sandboxed() *syscall.SysProcAttr {
	sys := &syscall.SysProcAttr{
		Pdeathsig:  syscall.SIGKILL,
		Setpgid:    true,
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC,
	}
	if os.Geteuid() == 0 {
		sys.Credential = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
	} else {
		sys.Cloneflags |= syscall.CLONE_NEWUSER
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	return sys
}
