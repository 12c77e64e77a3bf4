package native

import (
	"encoding/binary"

	"github.com/kboost/kboost/kernelsim"
)

// elfCodeOff is where the runner code starts in the file (after the ELF and
// program headers of either class).
const elfCodeOff = 0x80

// buildELF returns a minimal static executable: an ELF header, one PT_LOAD
// program header mapping the whole file read+execute at base, and the code at
// file offset elfCodeOff, which is also the entry point. No sections, no
// interpreter, no libc.
func (t *target) buildELF(base uint64, code []byte) []byte {
	le := binary.LittleEndian
	f := make([]byte, elfCodeOff+len(code))
	copy(f[elfCodeOff:], code)
	copy(f, []byte{0x7F, 'E', 'L', 'F', t.elfClass, 1 /* little endian */, 1 /* version */})
	entry := base + elfCodeOff
	size := uint64(len(f))
	const (
		etExec = 2
		ptLoad = 1
		pfRX   = 5
	)
	if t.elfClass == 2 {
		le.PutUint16(f[16:], etExec)
		le.PutUint16(f[18:], t.elfMachine)
		le.PutUint32(f[20:], 1)
		le.PutUint64(f[24:], entry)
		le.PutUint64(f[32:], 64) // e_phoff
		le.PutUint16(f[52:], 64) // e_ehsize
		le.PutUint16(f[54:], 56) // e_phentsize
		le.PutUint16(f[56:], 1)  // e_phnum
		p := f[64:]
		le.PutUint32(p[0:], ptLoad)
		le.PutUint32(p[4:], pfRX)
		le.PutUint64(p[8:], 0)
		le.PutUint64(p[16:], base)
		le.PutUint64(p[24:], base)
		le.PutUint64(p[32:], size)
		le.PutUint64(p[40:], size)
		le.PutUint64(p[48:], kernelsim.PageSize)
	} else {
		le.PutUint16(f[16:], etExec)
		le.PutUint16(f[18:], t.elfMachine)
		le.PutUint32(f[20:], 1)
		le.PutUint32(f[24:], uint32(entry))
		le.PutUint32(f[28:], 52) // e_phoff
		le.PutUint16(f[40:], 52) // e_ehsize
		le.PutUint16(f[42:], 32) // e_phentsize
		le.PutUint16(f[44:], 1)  // e_phnum
		p := f[52:]
		le.PutUint32(p[0:], ptLoad)
		le.PutUint32(p[4:], 0)
		le.PutUint32(p[8:], uint32(base))
		le.PutUint32(p[12:], uint32(base))
		le.PutUint32(p[16:], uint32(size))
		le.PutUint32(p[20:], uint32(size))
		le.PutUint32(p[24:], pfRX)
		le.PutUint32(p[28:], kernelsim.PageSize)
	}
	return f
}

// runnerImage generates the runner for l and its executable.
func (t *target) runnerImage(l kernelsim.Layout, emu bool) (*runnerCode, []byte) {
	rc := t.genRunner(l, t.codeBase+elfCodeOff, emu)
	return rc, t.buildELF(t.codeBase, rc.code)
}
