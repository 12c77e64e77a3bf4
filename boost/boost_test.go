package boost

import (
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
)

func hexBytes(t testing.TB, h string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(h, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", h, err)
	}
	return b
}

const (
	m64 = decode.Mode64
	m32 = decode.Mode32
)

// kcase is one hand-checked expectation. want* come from reading the kernel
// source at cite (Debian linux-source-6.1 unless the policy says otherwise), not
// from running this package.
type kcase struct {
	pol     string
	mode    decode.Mode
	hex     string
	cfg     func(*Config)
	verdict Verdict
	errno   Errno
	rule    string // the deciding rule: the last Reason
	cite    string
}

var noPreempt = func(c *Config) { c.Preemption = false }

func preemptOn(c *Config) { c.Preemption = true }

var kcases = []kcase{
	// linux-6.1, x86-64. Debian defaults are PREEMPTION=y; most cases turn it off
	// to reach can_boost (core.c:399 tests !IS_ENABLED(CONFIG_PREEMPTION) first).
	{"linux-6.1", m64, "90", noPreempt, Boost, 0, "prepare_singlestep.boost", "core.c:173 default -> 1; core.c:399-408"},
	{"linux-6.1", m64, "90", preemptOn, SingleStep, 0, "prepare_singlestep.int3", "core.c:399 PREEMPTION -> int3 at core.c:414"},
	{"linux-6.1", m64, "90", func(c *Config) { c.Preemption = false; c.PostHandler = true }, SingleStep, 0, "prepare_singlestep.int3", "core.c:399 !p->post_handler"},
	{"linux-6.1", m64, "c3", noPreempt, Boost, 0, "prepare_singlestep.boost", "C3 not in can_boost list; boostable wins over emulate_op in setup_singlestep (core.c:795 before :813)"},
	{"linux-6.1", m64, "c3", preemptOn, Emulate, 0, "setup_singlestep.emulate", "core.c:589 kprobe_emulate_ret"},
	{"linux-6.1", m64, "e8 00 00 00 00", noPreempt, Emulate, 0, "setup_singlestep.emulate", "core.c:168 E8 not boostable; core.c:604 emulate call"},
	{"linux-6.1", m64, "e9 00 00 00 00", noPreempt, Emulate, 0, "setup_singlestep.emulate", "core.c:168,611"},
	{"linux-6.1", m64, "eb fe", noPreempt, Emulate, 0, "setup_singlestep.emulate", "core.c:169,610"},
	{"linux-6.1", m64, "74 05", noPreempt, Emulate, 0, "setup_singlestep.emulate", "core.c:161,620"},
	{"linux-6.1", m64, "0f 84 00 01 00 00", noPreempt, Emulate, 0, "setup_singlestep.emulate", "twobyte 0x84 clear; core.c:628 jcc"},
	{"linux-6.1", m64, "e3 05", noPreempt, Emulate, 0, "setup_singlestep.emulate", "core.c:167 E0-E3; core.c:643 loop"},
	{"linux-6.1", m64, "ff d0", noPreempt, Emulate, 0, "setup_singlestep.emulate", "core.c:184 FF only /4 boostable; core.c:655 call indirect reg"},
	{"linux-6.1", m64, "ff e0", noPreempt, Boost, 0, "prepare_singlestep.boost", "core.c:186 FF /4 boostable"},
	{"linux-6.1", m64, "ff e0", preemptOn, Emulate, 0, "setup_singlestep.emulate", "core.c:661 jmp indirect reg emulated"},
	{"linux-6.1", m64, "ff 20", noPreempt, Reject, EOPNOTSUPP, "prepare_emulation.indirect_mem", "core.c:671-672 mod != 3"},
	{"linux-6.1", m64, "67 ff e0", noPreempt, Reject, EOPNOTSUPP, "prepare_emulation.indirect_addr_size", "core.c:669 addr_bytes 4 != 8"},
	{"linux-6.1", m64, "ff 18", noPreempt, Reject, EOPNOTSUPP, "prepare_emulation.far_indirect", "core.c:657 (opcode & 0x8) far call"},
	{"linux-6.1", m64, "ff 28", noPreempt, Reject, EOPNOTSUPP, "prepare_emulation.far_indirect", "core.c:663 far jmp"},
	{"linux-6.1", m32, "ea 00 00 00 00 10 00", noPreempt, Reject, EOPNOTSUPP, "prepare_emulation.far", "core.c:595-596"},
	{"linux-6.1", m32, "9a 00 00 00 00 10 00", noPreempt, Reject, EOPNOTSUPP, "prepare_emulation.far", "core.c:595"},
	{"linux-6.1", m64, "48 cf", noPreempt, Reject, EOPNOTSUPP, "prepare_emulation.iret", "core.c:598 opcode CF (REX is not an opcode byte)"},
	{"linux-6.1", m64, "cc", noPreempt, Reject, EINVAL, "copy_insn.int3", "core.c:355-356 before prepare_emulation"},
	{"linux-6.1", m64, "0f 01 c1", noPreempt, Reject, EOPNOTSUPP, "prepare_emulation.vmx", "core.c:634-638 reg 0 mod 3"},
	{"linux-6.1", m64, "0f 01 d0", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "xgetbv reg 2: not VMX; twobyte bit 0x01 clear"},
	{"linux-6.1", m64, "8e d0", noPreempt, Reject, EINVAL, "copy_insn.masking_exception", "insn.h:272 8E /2"},
	{"linux-6.1", m32, "1f", noPreempt, Reject, EINVAL, "copy_insn.masking_exception", "insn.h:258 POP_SS_OPCODE 0x1f (POP DS)"},
	{"linux-6.1", m32, "17", noPreempt, Boost, 0, "prepare_singlestep.boost", "pop %ss (0x17) is not tested by insn_masking_exception and is not on the can_boost list"},
	{"linux-6.1", m64, "0f 0b 78 65 6e 0f a2", noPreempt, Reject, EINVAL, "copy_insn.emulate_prefix", "core.c:351; emulate_prefix.h xen"},
	{"linux-6.1", m64, "0f 0b 6b 76 6d 0f a2", noPreempt, Reject, EINVAL, "copy_insn.emulate_prefix", "core.c:351; emulate_prefix.h kvm"},
	{"linux-6.1", m64, "c5 f8 77", noPreempt, Emulate, 0, "setup_singlestep.emulate", "insn.c:299 VEX nbytes=1 -> bytes[0]=0x77 hits core.c:161 and :620 (jcc)"},
	{"linux-6.1", m64, "c5 fd 6f 00", noPreempt, Boost, 0, "prepare_singlestep.boost", "VEX opcode 0x6f read as one-byte: default -> boostable"},
	{"linux-6.1", m64, "62 f1 7d 48 fe c1", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "EVEX opcode 0xfe read as Grp4: core.c:181"},
	{"linux-6.1", m64, "0f 1f 44 00 00", noPreempt, Boost, 0, "prepare_singlestep.boost", "twobyte 0x1f set (row 10)"},
	{"linux-6.1", m64, "0f 38 f0 00", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "core.c:150 nbytes 3 != 1"},
	{"linux-6.1", m64, "0f a2", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "twobyte 0xa2 clear"},
	{"linux-6.1", m64, "0f 31", noPreempt, Boost, 0, "prepare_singlestep.boost", "twobyte 0x31 set"},
	{"linux-6.1", m64, "2e 90", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "core.c:157 prefix 0x2e"},
	{"linux-6.1", m64, "67 8b 00", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "core.c:157 address-size prefix"},
	{"linux-6.1", m64, "3e ff e0", noPreempt, Boost, 0, "prepare_singlestep.boost", "3E (notrack) is not examined"},
	{"linux-6.1", m64, "f0 ff 00", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "core.c:184-186 FF /0"},
	{"linux-6.1", m64, "c0 e0 02", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "core.c:164 C0-C1"},
	{"linux-6.1", m64, "48 b8 01 00 00 00 00 00 00 00", noPreempt, Boost, 0, "prepare_singlestep.boost", "len 10: 15-10 >= 5 (core.c:400)"},
	{"linux-6.1", m64, "48 c7 80 00 01 00 00 01 00 00 00", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "len 11: 15-11 < 5"},
	{"linux-6.1", m64, "26 26 26 26 48 c7 80 00 01 00 00 01 00 00 00", noPreempt, Reject, ENOSPC, "prepare_singlestep.enospc", "len 15: core.c:411-412"},

	// linux-6.12: group refinements and INT/UD (upstream 6.9).
	{"linux-6.12", m64, "0f 0b", noPreempt, Reject, EILSEQ, "can_probe.int_ud", "6.12 can_probe is_exception_insn UD2"},
	{"linux-6.12", m64, "cd 80", noPreempt, Reject, EILSEQ, "can_probe.int_ud", "INT n"},
	{"linux-6.12", m64, "cc", noPreempt, Reject, EILSEQ, "can_probe.int_ud", "INT3 refused before __copy_instruction"},
	{"linux-6.12", m64, "c0 e0 02", noPreempt, Boost, 0, "prepare_singlestep.boost", "Grp2 /4"},
	{"linux-6.12", m64, "c0 f0 02", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "Grp2 /6"},
	{"linux-6.12", m64, "f6 c0 01", noPreempt, Boost, 0, "prepare_singlestep.boost", "Grp3 /0"},
	{"linux-6.12", m64, "f6 c8 01", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "Grp3 /1"},
	{"linux-6.12", m64, "fe c0", noPreempt, Boost, 0, "prepare_singlestep.boost", "Grp4 /0"},
	{"linux-6.12", m64, "ff c0", noPreempt, Boost, 0, "prepare_singlestep.boost", "Grp5 /0"},
	{"linux-6.12", m64, "ff 30", noPreempt, SingleStep, 0, "prepare_singlestep.int3", "Grp5 /6"},
	{"linux-6.12", m64, "f0 ff 00", noPreempt, Boost, 0, "prepare_singlestep.boost", "Grp5 /0; LOCK prefix not examined"},
	{"linux-6.12", m64, "62 f1 7d 48 fe c1", noPreempt, Boost, 0, "prepare_singlestep.boost", "EVEX opcode 0xfe read as Grp4 with reg 0"},

	// linux-2.6.17-i386 (April 2006 can_boost + resume_execution).
	{"linux-2.6.17-i386", m32, "90", nil, Boost, 0, "booster2006.lazy_jmp", "default row: boostable; jmp written at slot+1"},
	{"linux-2.6.17-i386", m32, "90", preemptOn, SingleStep, 0, "booster2006.singlestep", "#ifndef CONFIG_PREEMPT around the boosted path"},
	{"linux-2.6.17-i386", m32, "9c", nil, Boost, 0, "booster2006.lazy_jmp", "Apr 2006: case 0x90 (9A/9C) removed; resume_execution 0x9c breaks to the generic path"},
	{"linux-2.6.17-i386", m32, "c6 00 01", nil, Boost, 0, "booster2006.lazy_jmp", "row C0: 0xc1 < op < 0xcc"},
	{"linux-2.6.17-i386", m32, "e9 00 00 00 00", nil, SingleStep, 0, "booster2006.singlestep", "row E0: (op & 4) || op == 0xea"},
	{"linux-2.6.17-i386", m32, "ea 00 00 00 00 10 00", nil, Boost, 0, "booster2006.resume_special", "resume_execution case 0xea: boostable = 1, no jmp"},
	{"linux-2.6.17-i386", m32, "c3", nil, Boost, 0, "booster2006.resume_special", "resume_execution case 0xc3"},
	{"linux-2.6.17-i386", m32, "ff e0", nil, Boost, 0, "booster2006.resume_special", "can_boost(FF) false, but resume_execution (insn[1] & 0x31) == 0x20 sets 1"},
	{"linux-2.6.17-i386", m32, "ff d0", nil, SingleStep, 0, "booster2006.singlestep", "resume_execution (insn[1] & 0x30) == 0x10: no_change"},
	{"linux-2.6.17-i386", m32, "0f a2", nil, SingleStep, 0, "booster2006.singlestep", "twobyte 0xa2 clear"},
	{"linux-2.6.17-i386", m32, "0f 1f 00", nil, SingleStep, 0, "booster2006.singlestep", "the 2006 table has 0F 1F clear (6.1 sets it)"},
	{"linux-2.6.17-i386", m32, "66 90", nil, Boost, 0, "booster2006.lazy_jmp", "0x63 < 0x66 < 0x67: prefix retried"},
	{"linux-2.6.17-i386", m32, "2e 90", nil, SingleStep, 0, "booster2006.singlestep", "default: op != 0x2e"},
	{"linux-2.6.17-i386", m32, "67 90", nil, SingleStep, 0, "booster2006.singlestep", "row 60: op != 0x67"},
	{"linux-2.6.17-i386", m32, "c7 80 00 01 00 00 01 00 00 00", nil, Boost, 0, "booster2006.lazy_jmp", "len 10: 10 + 5 < 16"},
	{"linux-2.6.17-i386", m32, "c7 84 24 00 01 00 00 01 00 00 00", nil, SingleStep, 0, "booster2006.singlestep", "len 11: 11 + 5 >= 16 -> boostable = -1"},

	// uprobes-x86 (6.1 arch/x86/kernel/uprobes.c).
	{"uprobes-x86", m64, "90", nil, Emulate, 0, "uprobe.emulate_nop", "uprobes.c:726"},
	{"uprobes-x86", m64, "f3 90", nil, Emulate, 0, "uprobe.emulate_nop", "pause: OPCODE1 0x90"},
	{"uprobes-x86", m64, "41 90", nil, Emulate, 0, "uprobe.emulate_nop", "xchg %eax,%r8d: REX is not an opcode byte"},
	{"uprobes-x86", m64, "c5 f8 77", nil, Emulate, 0, "uprobe.emulate_jcc", "VEX opcode 0x77: good_insns_64[0x77]; is_cond_jmp_opcode(0x77)"},
	{"uprobes-x86", m64, "c5 fd 6f 00", nil, Reject, ENOTSUPP, "uprobe.good_insns", "good_insns_64[0x6f] = 0 (outs)"},
	{"uprobes-x86", m64, "c5 fd ef c0", nil, Reject, ENOTSUPP, "uprobe.good_insns", "good_insns_64[0xef] = 0 (out)"},
	{"uprobes-x86", m64, "f0 ff 00", nil, Reject, ENOTSUPP, "uprobe.bad_prefix", "is_prefix_bad LOCK"},
	{"uprobes-x86", m64, "2e 90", nil, Reject, ENOTSUPP, "uprobe.bad_prefix", "is_prefix_bad CS"},
	{"uprobes-x86", m64, "0f 05", nil, SingleStep, 0, "uprobe.xol", "good_insns_64[0x0f] = 1: 0F xx never reaches good_2byte_insns"},
	{"uprobes-x86", m64, "0f 0b", nil, SingleStep, 0, "uprobe.xol", "ud2 accepted (0x0F good)"},
	{"uprobes-x86", m64, "66 e8 00 00 00 00", nil, Reject, ENOTSUPP, "uprobe.branch_66", "uprobes.c:753"},
	{"uprobes-x86", m64, "e8 00 00 00 00", nil, Emulate, 0, "uprobe.emulate_call", "uprobes.c:729"},
	{"uprobes-x86", m64, "75 02", nil, Emulate, 0, "uprobe.emulate_jcc", "is_cond_jmp_opcode"},
	{"uprobes-x86", m64, "0f 85 00 00 00 00", nil, Emulate, 0, "uprobe.emulate_jcc", "OPCODE2 - 0x10"},
	{"uprobes-x86", m64, "55", nil, Emulate, 0, "uprobe.emulate_push", "push_setup_xol_ops length 1"},
	{"uprobes-x86", m64, "41 55", nil, Emulate, 0, "uprobe.emulate_push", "length 2 with REX 0x41 (uprobes.c:780)"},
	{"uprobes-x86", m64, "48 55", nil, SingleStep, 0, "uprobe.xol", "REX 0x48: -ENOSYS, default XOL"},
	{"uprobes-x86", m64, "fa", nil, Reject, ENOTSUPP, "uprobe.good_insns", "cli"},
	{"uprobes-x86", m64, "f4", nil, Reject, ENOTSUPP, "uprobe.good_insns", "hlt"},
	{"uprobes-x86", m64, "cd 80", nil, Reject, ENOTSUPP, "uprobe.good_insns", "int n"},
	{"uprobes-x86", m64, "e4 60", nil, Reject, ENOTSUPP, "uprobe.good_insns", "in"},
	{"uprobes-x86", m64, "8e d0", nil, Reject, ENOTSUPP, "uprobe.masking_exception", "mov %eax,%ss"},
	{"uprobes-x86", m64, "c3", nil, SingleStep, 0, "uprobe.xol", "ret: XOL, ip not fixed"},
	{"uprobes-x86", m32, "1e", nil, SingleStep, 0, "uprobe.xol", "good_insns_32[0x1e] = 1"},
	{"uprobes-x86", m64, "1e", nil, Reject, ENOTSUPP, "uprobe.good_insns", "good_insns_64[0x1e] = 0"},
	{"uprobes-x86", m32, "17", nil, Reject, ENOTSUPP, "uprobe.good_insns", "good_insns_32[0x17] = 0"},
}

func TestKernelCases(t *testing.T) {
	for _, tc := range kcases {
		p, err := Lookup(tc.pol)
		if err != nil {
			t.Fatal(err)
		}
		b := hexBytes(t, tc.hex)
		in, derr := decode.Decode(b, tc.mode, 0xffffffff81000000)
		if derr != nil && in.Len == 0 {
			t.Errorf("%s %s: decode: %v", tc.pol, tc.hex, derr)
			continue
		}
		env := p.DefaultEnv()
		env.SlotAddr = 0xffffffffa0000000
		if tc.cfg != nil {
			tc.cfg(&env.Config)
		}
		steps, d := p.ExplainBytes(b, tc.mode, 0xffffffff81000000, env)
		last := ""
		if len(d.Reasons) > 0 {
			last = d.Reasons[len(d.Reasons)-1].Rule
		}
		if d.Verdict != tc.verdict || d.Errno != tc.errno || last != tc.rule {
			t.Errorf("%s %v %q: got %v %v (%s), want %v %v (%s) [%s]", tc.pol, tc.mode, tc.hex, d.Verdict, d.Errno, last, tc.verdict, tc.errno, tc.rule, tc.cite)
			for _, s := range steps {
				t.Logf("    %v", s)
			}
		}
		// Classify of the decoded instruction must agree (except where the
		// kernel decoder folds an emulate prefix package decode does not).
		if c := p.Classify(&in, env); !hasEmulatePrefix(b) && (c.Verdict != d.Verdict || c.Errno != d.Errno) {
			t.Errorf("%s %q: Classify %v %v != Explain %v %v", tc.pol, tc.hex, c.Verdict, c.Errno, d.Verdict, d.Errno)
		}
		for _, r := range d.Reasons {
			if _, ok := RuleByID(r.Rule); !ok {
				t.Errorf("%s %q: reason %q not in Rules()", tc.pol, tc.hex, r.Rule)
			}
		}
	}
}

// TestSlotImage checks the slot bytes against __copy_instruction (core.c:378:
// newdisp = src + disp - real) and synthesize_reljump (core.c:118:
// rel = to - (from + 5)).
func TestSlotImage(t *testing.T) {
	p, _ := Lookup("linux-6.1")
	var src, slot = uint64(0xffffffff81234560), uint64(0xffffffffc0001000)
	b := hexBytes(t, "48 8b 05 10 00 00 00") // mov 0x10(%rip),%rax
	in, err := decode.Decode(b, m64, src)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Config: Config{}, SlotAddr: slot}
	d := p.Classify(&in, env)
	if d.Verdict != Boost {
		t.Fatalf("verdict %v, want boost: %v", d.Verdict, d.String())
	}
	want := append([]byte{}, b...)
	binary.LittleEndian.PutUint32(want[3:], uint32(int32(int64(src+0x10-slot))))
	want = append(want, 0xe9, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(want[8:], uint32(int32(int64((src+7)-(slot+7+5)))))
	if got := d.SlotBytes(); hex.EncodeToString(got) != hex.EncodeToString(want) {
		t.Errorf("slot % x, want % x", got, want)
	}

	// Under PREEMPTION the slot ends in int3 (core.c:414).
	env.Config.Preemption = true
	d = p.Classify(&in, env)
	if got := d.SlotBytes(); len(got) != 8 || got[7] != 0xcc {
		t.Errorf("preempt slot % x, want insn + cc", got)
	}

	// A slot more than 2 GiB away: the new displacement overflows s32 (core.c:381).
	env.SlotAddr = 0x00007f0000000000
	d = p.Classify(&in, env)
	if d.Verdict != Reject || d.Errno != EINVAL || d.Reasons[len(d.Reasons)-1].Rule != "copy_insn.rip_overflow" {
		t.Errorf("far slot: %v", d.String())
	}
	// i386 has no RIP-relative addressing: 8b 05 is mov disp32,%eax.
	in32, _ := decode.Decode(hexBytes(t, "8b 05 10 00 00 00"), m32, 0xc1000000)
	if d := p.Classify(&in32, env); d.Verdict == Reject {
		t.Errorf("i386 disp32 rejected: %v", d.String())
	}
}

// TestSites checks check_kprobe_address_safe's order and the can_boost
// exception-table test with tables.
// TestUprobeRIPRewrite follows riprel_analyze() (uprobes.c): REX.B cleared,
// ModRM "00 reg 101" -> "10 reg scratch", scratch si unless reg or vvvv is si.
func TestUprobeRIPRewrite(t *testing.T) {
	p, _ := Lookup("uprobes-x86")
	cases := []struct {
		in, slot string
		scratch  int8
	}{
		{"48 8b 05 10 00 00 00", "48 8b 86 10 00 00 00", 6},             // mov 0x10(%rip),%rax -> 0x10(%rsi)
		{"49 8b 35 10 00 00 00", "48 8b b7 10 00 00 00", 7},             // mov ..,%rsi (reg 6): di; REX.B cleared
		{"c5 f9 6f 05 10 00 00 00", "", 0},                              // vmovdqa: VEX opcode 0x6f refused
		{"c4 e2 79 00 05 10 00 00 00", "c4 e2 79 00 86 10 00 00 00", 6}, // vpshufb: VEX3 byte 1 |= 0x60
		{"8b 05 10 00 00 00", "8b 86 10 00 00 00", 6},
	}
	for _, tc := range cases {
		d := p.ClassifyBytes(hexBytes(t, tc.in), m64, 0x401000)
		if tc.slot == "" {
			if d.Verdict != Reject {
				t.Errorf("%s: %v", tc.in, d.String())
			}
			continue
		}
		if got := hex.EncodeToString(d.SlotBytes()); got != strings.ReplaceAll(tc.slot, " ", "") || d.Scratch != tc.scratch {
			t.Errorf("%s: slot %s scratch %d, want %s %d", tc.in, got, d.Scratch, tc.slot, tc.scratch)
		}
	}
}

func TestSites(t *testing.T) {
	p, _ := Lookup("linux-6.1")
	const a = uint64(0xffffffff81000100)
	in, _ := decode.Decode([]byte{0x90}, m64, a)
	mk := func() *StaticSites {
		return &StaticSites{FtraceLocs: NewAddrTable(nil), ExTableAddrs: NewAddrTable(nil),
			JumpLabels: NewSiteTable(nil), StaticCalls: NewSiteTable(nil), Bugs: NewAddrTable(nil),
			BlacklistKnown: true}
	}
	cases := []struct {
		name  string
		set   func(s *StaticSites)
		cfg   func(c *Config)
		v     Verdict
		errno Errno
		rule  string
	}{
		{"clean", nil, nil, Boost, 0, "prepare_singlestep.boost"},
		{"blacklist", func(s *StaticSites) {
			s.Blacklist = []BlacklistRange{{Span: Span{a - 16, a + 16}, Kind: BlacklistSymbol}}
		}, nil, Reject, EINVAL, "blacklist.nokprobe"},
		{"noinstr", func(s *StaticSites) {
			s.Blacklist = []BlacklistRange{{Span: Span{a, a + 1}, Kind: BlacklistNoinstr}}
		}, nil, Reject, EINVAL, "blacklist.noinstr"},
		// jump_label addr_conflict: code <= end && code + size > start.
		{"jump label starting 1 byte before", func(s *StaticSites) {
			s.JumpLabels = NewSiteTable([]Span{{a - 1, a + 1}})
		}, nil, Reject, EINVAL, "site.jump_label"},
		{"jump label ending at addr", func(s *StaticSites) {
			s.JumpLabels = NewSiteTable([]Span{{a - 2, a}})
		}, nil, Boost, 0, "prepare_singlestep.boost"},
		{"static call", func(s *StaticSites) {
			s.StaticCalls = NewSiteTable([]Span{{a - 4, a + 1}})
		}, nil, Reject, EINVAL, "site.static_call"},
		{"bug", func(s *StaticSites) { s.Bugs = NewAddrTable([]uint64{a}) }, nil, Reject, EINVAL, "site.bug"},
		{"ftrace", func(s *StaticSites) { s.FtraceLocs = NewAddrTable([]uint64{a}) }, nil, Ftrace, 0, "ftrace.prepare"},
		{"ftrace without KPROBES_ON_FTRACE", func(s *StaticSites) { s.FtraceLocs = NewAddrTable([]uint64{a}) },
			func(c *Config) { c.KprobesOnFtrace = false }, Reject, EINVAL, "ftrace.no_kprobes_on_ftrace"},
		// can_boost line 144: search_exception_tables(addr) -> not boostable.
		{"extable", func(s *StaticSites) { s.ExTableAddrs = NewAddrTable([]uint64{a}) }, nil, SingleStep, 0, "prepare_singlestep.int3"},
		{"init text", func(s *StaticSites) { s.Init = NewSiteTable([]Span{{a - 8, a + 8}}) }, nil, Reject, EINVAL, "address_safe.init_text"},
	}
	for _, tc := range cases {
		s := mk()
		if tc.set != nil {
			tc.set(s)
		}
		env := &Env{Config: debian61, Sites: s, SlotAddr: 0xffffffffa0000000}
		env.Config.Preemption = false
		if tc.cfg != nil {
			tc.cfg(&env.Config)
		}
		steps, d := p.Explain(&in, env)
		last := ""
		if n := len(d.Reasons); n > 0 {
			last = d.Reasons[n-1].Rule
		}
		if d.Verdict != tc.v || d.Errno != tc.errno || last != tc.rule {
			t.Errorf("%s: got %v %v %s, want %v %v %s", tc.name, d.Verdict, d.Errno, last, tc.v, tc.errno, tc.rule)
			for _, st := range steps {
				t.Logf("   %v", st)
			}
		}
	}
}

func TestLookup(t *testing.T) {
	for _, n := range []string{"linux-6.1", "linux-6.12", "linux-2.6.17-i386", "uprobes-x86"} {
		if _, err := Lookup(n); err != nil {
			t.Error(err)
		}
	}
	_, err := Lookup("linux-5.0")
	if err == nil || !strings.Contains(err.Error(), "linux-6.1") {
		t.Errorf("Lookup error should list the policies: %v", err)
	}
}

func TestStrings(t *testing.T) {
	for v, want := range []string{"reject", "ftrace", "emulate", "singlestep", "boost"} {
		if Verdict(v).String() != want {
			t.Errorf("Verdict(%d) = %q", v, Verdict(v).String())
		}
		if pv, err := ParseVerdict(want); err != nil || pv != Verdict(v) {
			t.Errorf("ParseVerdict(%q) = %v, %v", want, pv, err)
		}
	}
	for e, want := range map[Errno]string{EILSEQ: "EILSEQ", EINVAL: "EINVAL", ENOENT: "ENOENT",
		EOPNOTSUPP: "EOPNOTSUPP", ENOSPC: "ENOSPC", EBUSY: "EBUSY", ENOTSUPP: "ENOTSUPP"} {
		if e.String() != want {
			t.Errorf("%d: %q want %q", e, e.String(), want)
		}
	}
	if ENOTSUPP != 524 || EILSEQ != 84 || EOPNOTSUPP != 95 {
		t.Error("errno values differ from Linux x86")
	}
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.ID] {
			t.Errorf("duplicate rule id %s", r.ID)
		}
		seen[r.ID] = true
		if r.Desc == "" || r.Where == "" {
			t.Errorf("rule %s lacks a description or location", r.ID)
		}
	}
}

func TestConfigFromFunc(t *testing.T) {
	kc, err := kimage.ParseKConfig([]byte(`# comment
CONFIG_PREEMPT_DYNAMIC=y
CONFIG_PREEMPTION=y
# CONFIG_X86_KERNEL_IBT is not set
CONFIG_RETPOLINE=y
CONFIG_OPTPROBES=y
CONFIG_KPROBES_ON_FTRACE=y
CONFIG_DYNAMIC_FTRACE=y
CONFIG_SMP=y
CONFIG_LOCALVERSION="-x"
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg := ConfigFromFunc(kc.Value); cfg != debian61 {
		t.Errorf("got %+v want %+v", cfg, debian61)
	}
	if c := ConfigFromFunc(nil); c != (Config{}) {
		t.Error("nil get")
	}
}
