package opcodes

import "fmt"

// Op describes one opcode: what length decoding needs and what classification
// needs. Generated tables hold Ops; decode returns a pointer to the one it used.
type Op struct {
	Mnemonic string  // Intel mnemonic in lower case ("add"); "" for an undefined slot
	Operands string  // operand codes in the Intel SDM appendix A style ("Ev,Gv")
	Flags    Flags   // properties, see the F* constants
	Imm      ImmKind // immediate (and moffs / far pointer) bytes following ModRM/SIB/disp
	Branch   Branch  // control-transfer class
}

// Flags are opcode properties.
type Flags uint32

const (
	FModRM      Flags = 1 << iota // a ModRM byte follows the opcode
	FInv64                        // invalid (#UD) in 64-bit mode
	FOnly64                       // valid only in 64-bit mode
	FDef64                        // operand size defaults to 64 bits in 64-bit mode (push, pop, ...)
	FForce64                      // operand size is 64 bits in 64-bit mode whatever 66 says (near branches, Intel)
	FInvalid                      // undefined opcode: #UD
	FPriv                         // privileged: #GP(0) at CPL 3
	FModMem                       // valid only with a memory operand (mod != 3)
	FModReg                       // valid only with a register operand (mod == 3)
	FPrefix                       // a prefix or escape byte, not an opcode
	FModIgnored                   // ModRM.mod is ignored: always a register operand (mov cr/dr)
)

var flagNames = [...]string{"modrm", "i64", "o64", "d64", "f64", "invalid", "priv", "mem", "reg", "prefix", "rmreg"}

func (f Flags) String() string { return bitNames(uint32(f), flagNames[:]) }

// bitNames spells a bit set as its names joined by "|" in bit order, any bits
// without a name as one hex number after them, and the empty set as "none".
func bitNames(f uint32, names []string) string {
	if f == 0 {
		return "none"
	}
	s := ""
	for i, n := range names {
		if f&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	if rest := f &^ (1<<len(names) - 1); rest != 0 {
		if s != "" {
			s += "|"
		}
		s += fmt.Sprintf("%#x", rest)
	}
	return s
}

// ImmKind is the kind and size rule of an instruction's immediate bytes.
type ImmKind uint8

const (
	ImmNone  ImmKind = iota
	ImmB             // 1 byte
	ImmW             // 2 bytes
	ImmZ             // 2 bytes with 16-bit operand size, else 4
	ImmV             // 2, 4 or 8 bytes by operand size (B8+r with REX.W)
	ImmD             // 4 bytes always
	ImmWB            // 2 bytes then 1 byte (enter)
	ImmAp            // far pointer: offset (2 or 4 by operand size) then 2-byte selector
	ImmMoffs         // memory offset of address size (2, 4 or 8)
	ImmBB            // 1 byte then 1 byte (extrq/insertq)
)

var immNames = [...]string{"none", "ib", "iw", "iz", "iv", "id", "iw,ib", "ap", "moffs", "ib,ib"}

func (k ImmKind) String() string {
	if int(k) < len(immNames) {
		return immNames[k]
	}
	return fmt.Sprintf("ImmKind(%d)", uint8(k))
}

// Branch classifies control transfers.
type Branch uint8

const (
	BranchNone    Branch = iota
	BranchJmp            // near relative jmp (E9, EB)
	BranchJcc            // near relative conditional (70-7F, 0F 80-8F)
	BranchLoop           // loop/loopz/loopnz/jcxz (E0-E3)
	BranchCall           // near relative call (E8)
	BranchJmpInd         // near indirect jmp (FF /4)
	BranchCallInd        // near indirect call (FF /2)
	BranchJmpFar         // far jmp (EA, FF /5)
	BranchCallFar        // far call (9A, FF /3)
	BranchRet            // near ret (C2, C3)
	BranchRetFar         // far ret (CA, CB)
	BranchIret           // iret (CF)
	BranchInt            // int3, int n, into, int1 (CC, CD, CE, F1)
	BranchSys            // syscall, sysenter, sysret, sysexit
	BranchUD             // ud0, ud1, ud2: always #UD
)

var branchNames = [...]string{"none", "jmp", "jcc", "loop", "call", "jmp-indirect", "call-indirect",
	"jmp-far", "call-far", "ret", "ret-far", "iret", "int", "sys", "ud"}

func (b Branch) String() string {
	if int(b) < len(branchNames) {
		return branchNames[b]
	}
	return fmt.Sprintf("Branch(%d)", uint8(b))
}

// Relative reports whether the branch has a relative displacement (Inst.Target valid).
func (b Branch) Relative() bool {
	return b == BranchJmp || b == BranchJcc || b == BranchLoop || b == BranchCall
}

// Map is the opcode map an instruction's opcode byte belongs to.
type Map uint8

const (
	MapOne   Map = iota // one-byte opcodes
	Map0F               // 0F xx (also VEX/EVEX mmmmm=1)
	Map0F38             // 0F 38 xx (also VEX/EVEX mmmmm=2)
	Map0F3A             // 0F 3A xx (also VEX/EVEX mmmmm=3)
	Map3DNow            // 0F 0F modrm [sib] [disp] suffix: Opcode is the suffix byte
	MapXOP8             // AMD XOP map 8 (8F, mmmmm=8)
	MapXOP9             // AMD XOP map 9
	MapXOPA             // AMD XOP map 10
	MapEVEX5            // EVEX map 5 (AVX512-FP16)
	MapEVEX6            // EVEX map 6 (AVX512-FP16)
	NumMaps
)

var mapNames = [...]string{"one", "0f", "0f38", "0f3a", "3dnow", "xop8", "xop9", "xopa", "evex5", "evex6"}

func (m Map) String() string {
	if int(m) < len(mapNames) {
		return mapNames[m]
	}
	return fmt.Sprintf("Map(%d)", uint8(m))
}
