package boost

import "math/bits"

// The kernel's 32-bit ARM probe decoder (arch/arm/probes/decode.c
// probes_decode_insn and decode_regs, the kprobes checkers and custom
// decoders) over the tables in a32_tables.go. Everything is a function of the
// raw instruction: an A32 word, a T32 value (first halfword in bits 31..16) or
// a T16 halfword.

// a32Kind is a table entry's type (enum decode_type).
type a32Kind uint8

const (
	dTable a32Kind = iota + 1
	dCustom
	dSimulate
	dEmulate
	dOr
	dReject
)

// Register constraint per nibble (enum decode_reg_type).
const (
	rNONE = iota
	rANY
	rSAMEAS16
	rSP
	rPC
	rNOSP
	rNOSPPC
	rNOPC
	rNOPCWB
	rNOPCX
	rNOSPPCX
)

// rr packs the REGS() nibbles for bits 19..16, 15..12, 11..8, 7..4, 3..0.
func rr(r16, r12, r8, r4, r0 uint32) uint32 { return r16<<16 | r12<<12 | r8<<8 | r4<<4 | r0 }

var a32RegTypeNames = [...]string{"", "any", "same as Rn", "SP only", "PC only", "not SP", "not SP or PC",
	"not PC", "not PC with writeback", "not PC", "not SP or PC"}

type a32Entry struct {
	kind        a32Kind
	mask, value uint32
	regs        uint32
	act         a32Act
	sub         *a32Table
	label       string // dReject: kboost's rule label
}

type a32Table struct {
	name string // the kernel's array
	end  string // label of the rule for falling off its end
	e    []a32Entry
}

// a32Act is a kernel action (enum probes_arm_action, probes_t32_action,
// probes_t16_action).
type a32Act uint8

const (
	armNone a32Act = iota
	armPreloadImm
	armPreloadReg
	armBranchImm
	armBranchReg
	armMrs
	armClz
	armSaturatingArithmetic
	armMul1
	armMul2
	armLdrstrd
	armLoad
	armStore
	armLoadExtra
	armStoreExtra
	armMovIpSp
	armDataProcessingReg
	armDataProcessingImm
	armMovHalfword
	armSev
	armWfe
	armSaturate
	armRev
	armMmi
	armPack
	armExtend
	armExtendAdd
	armMulAddLong
	armMulAdd
	armBitfield
	armBranch
	armLdmstm
	t32Ldmstm
	t32Ldrdstrd
	t32TableBranch
	t32Tst
	t32Cmp
	t32Mov
	t32Addsub
	t32Logical
	t32AddwsubwPc
	t32Addwsubw
	t32Movw
	t32Sat
	t32Bitfield
	t32Sev
	t32Wfe
	t32Mrs
	t32BranchCond
	t32Branch
	t32Pldi
	t32LdrLit
	t32Ldrstr
	t32SignExtend
	t32Media
	t32Reverse
	t32MulAdd
	t32MulAdd2
	t32MulAddLong
	t16AddSp
	t16Cbz
	t16SignExtend
	t16Push
	t16Pop
	t16Sev
	t16Wfe
	t16It
	t16Cmp
	t16Addsub
	t16Logical
	t16LdrLit
	t16Blx
	t16Hiregops
	t16Ldrhstrh
	t16Ldrstr
	t16Adr
	t16Ldmstm
	t16BranchCond
	t16Branch
	numA32Acts
)

// Custom decoders.
type a32Custom uint8

const (
	cNone a32Custom = iota
	cLdmstm
	cT32Ldmstm
	cCondBranch16
	cCondBranch32
	cIT
	cHiregs
	cPush
	cPop
)

// Register-usage checkers (arm_regs_checker); cRegsAll: none, all registers
// count as used.
type a32RegsCheck uint8

const (
	cRegsAll a32RegsCheck = iota
	cRegsNormal
	cRegsNoUse
	cRegsLdmstm
	cRegsMovIPSP
	cRegsLdrdstrd
)

// Stack checkers (arm_stack_checker, t32_stack_checker, t16_stack_checker).
type a32StackCheck uint8

const (
	cStackNone a32StackCheck = iota
	cStackARM
	cStackT32
	cStackT16
)

// a32ActInfo is one action's entry in the kernel's kprobes_*_actions[] and
// checker arrays.
type a32ActInfo struct {
	id      string // rule id suffix
	handler string // insn_handler for SIMULATE/EMULATE entries
	custom  a32Custom
	regs    a32RegsCheck
	stack   a32StackCheck
}

var a32Acts = [numA32Acts]a32ActInfo{
	armPreloadImm:           {id: "preload_imm", handler: "probes_simulate_nop"},
	armPreloadReg:           {id: "preload_reg", handler: "probes_simulate_nop"},
	armBranchImm:            {id: "blx_imm", handler: "simulate_blx1"},
	armBranchReg:            {id: "bx_blx_reg", handler: "simulate_blx2bx"},
	armMrs:                  {id: "mrs", handler: "simulate_mrs", regs: cRegsNormal},
	armClz:                  {id: "clz", handler: "emulate_rd12rm0_noflags_nopc"},
	armSaturatingArithmetic: {id: "saturating_arithmetic", handler: "emulate_rd12rn16rm0_rwflags_nopc", regs: cRegsNormal},
	armMul1:                 {id: "mul1", handler: "emulate_rdlo12rdhi16rn0rm8_rwflags_nopc", regs: cRegsNormal},
	armMul2:                 {id: "mul2", handler: "emulate_rd16rn12rm0rs8_rwflags_nopc", regs: cRegsNormal},
	armLdrstrd:              {id: "ldrd_strd", handler: "emulate_ldrdstrd", regs: cRegsLdrdstrd, stack: cStackARM},
	armLoad:                 {id: "load", handler: "emulate_ldr", regs: cRegsNormal},
	armStore:                {id: "store", handler: "emulate_str", regs: cRegsNormal, stack: cStackARM},
	armLoadExtra:            {id: "load_extra", handler: "emulate_ldr", regs: cRegsNormal},
	armStoreExtra:           {id: "store_extra", handler: "emulate_str", regs: cRegsNormal, stack: cStackARM},
	armMovIpSp:              {id: "mov_ip_sp", handler: "simulate_mov_ipsp", regs: cRegsMovIPSP},
	armDataProcessingReg:    {id: "data_processing_reg", handler: "emulate_rd12rn16rm0rs8_rwflags", regs: cRegsNormal},
	armDataProcessingImm:    {id: "data_processing_imm", handler: "emulate_rd12rn16rm0rs8_rwflags", regs: cRegsNormal},
	armMovHalfword:          {id: "movw_movt", handler: "emulate_rd12rm0_noflags_nopc"},
	armSev:                  {id: "sev_yield", handler: "probes_emulate_none", regs: cRegsNoUse},
	armWfe:                  {id: "nop_wfe_wfi", handler: "probes_simulate_nop", regs: cRegsNoUse},
	armSaturate:             {id: "saturate", handler: "emulate_rd12rn16rm0_rwflags_nopc", regs: cRegsNormal},
	armRev:                  {id: "rev", handler: "emulate_rd12rm0_noflags_nopc", regs: cRegsNormal},
	armMmi:                  {id: "parallel_arith", handler: "emulate_rd12rn16rm0_rwflags_nopc", regs: cRegsNormal},
	armPack:                 {id: "pack", handler: "emulate_rd12rn16rm0_rwflags_nopc", regs: cRegsNormal},
	armExtend:               {id: "extend", handler: "emulate_rd12rm0_noflags_nopc", regs: cRegsNormal},
	armExtendAdd:            {id: "extend_add", handler: "emulate_rd12rn16rm0_rwflags_nopc", regs: cRegsNormal},
	armMulAddLong:           {id: "mul_add_long", handler: "emulate_rdlo12rdhi16rn0rm8_rwflags_nopc", regs: cRegsNormal},
	armMulAdd:               {id: "mul_add", handler: "emulate_rd16rn12rm0rs8_rwflags_nopc", regs: cRegsNormal},
	armBitfield:             {id: "bitfield", handler: "emulate_rd12rm0_noflags_nopc", regs: cRegsNormal},
	armBranch:               {id: "b_bl", handler: "simulate_bbl"},
	armLdmstm:               {id: "ldm_stm", custom: cLdmstm, regs: cRegsLdmstm, stack: cStackARM},

	t32Ldmstm:      {id: "ldm_stm", custom: cT32Ldmstm, stack: cStackT32},
	t32Ldrdstrd:    {id: "ldrd_strd", handler: "t32_emulate_ldrdstrd", stack: cStackT32},
	t32TableBranch: {id: "tbb_tbh", handler: "t32_simulate_table_branch"},
	t32Tst:         {id: "tst_teq_cmn_cmp", handler: "t32_emulate_rd8rn16rm0_rwflags"},
	t32Cmp:         {id: "cmn_cmp_imm", handler: "t32_emulate_rd8rn16rm0_rwflags"},
	t32Mov:         {id: "mov_mvn", handler: "t32_emulate_rd8rn16rm0_rwflags"},
	t32Addsub:      {id: "add_sub_sp", handler: "t32_emulate_rd8rn16rm0_rwflags"},
	t32Logical:     {id: "data_processing", handler: "t32_emulate_rd8rn16rm0_rwflags"},
	t32AddwsubwPc:  {id: "adr", handler: "t32_emulate_rd8pc16_noflags"},
	t32Addwsubw:    {id: "addw_subw", handler: "t32_emulate_rd8rn16_noflags"},
	t32Movw:        {id: "movw_movt", handler: "t32_emulate_rd8rn16_noflags"},
	t32Sat:         {id: "saturate", handler: "t32_emulate_rd8rn16rm0_rwflags"},
	t32Bitfield:    {id: "bitfield", handler: "t32_emulate_rd8rn16_noflags"},
	t32Sev:         {id: "sev_yield", handler: "probes_emulate_none"},
	t32Wfe:         {id: "nop_wfe_wfi", handler: "probes_simulate_nop"},
	t32Mrs:         {id: "mrs", handler: "t32_simulate_mrs"},
	t32BranchCond:  {id: "b_cond", custom: cCondBranch32},
	t32Branch:      {id: "b_bl_blx", handler: "t32_simulate_branch"},
	t32Pldi:        {id: "pld_pli", handler: "probes_simulate_nop"},
	t32LdrLit:      {id: "ldr_literal", handler: "t32_simulate_ldr_literal"},
	t32Ldrstr:      {id: "ldr_str", handler: "t32_emulate_ldrstr", stack: cStackT32},
	t32SignExtend:  {id: "extend", handler: "t32_emulate_rd8rn16rm0_rwflags"},
	t32Media:       {id: "media", handler: "t32_emulate_rd8rn16rm0_rwflags"},
	t32Reverse:     {id: "rev_clz", handler: "t32_emulate_rd8rn16_noflags"},
	t32MulAdd:      {id: "mul", handler: "t32_emulate_rd8rn16rm0_rwflags"},
	t32MulAdd2:     {id: "mul_add", handler: "t32_emulate_rdlo12rdhi8rn16rm0_noflags"},
	t32MulAddLong:  {id: "mul_long", handler: "t32_emulate_rdlo12rdhi8rn16rm0_noflags"},

	t16AddSp:      {id: "add_sp_imm", handler: "t16_simulate_add_sp_imm"},
	t16Cbz:        {id: "cbz_cbnz", handler: "t16_simulate_cbz"},
	t16SignExtend: {id: "extend_rev", handler: "t16_emulate_loregs_rwflags"},
	t16Push:       {id: "push", custom: cPush, stack: cStackT16},
	t16Pop:        {id: "pop", custom: cPop},
	t16Sev:        {id: "sev_yield", handler: "probes_emulate_none"},
	t16Wfe:        {id: "nop_wfe_wfi", handler: "probes_simulate_nop"},
	t16It:         {id: "it", custom: cIT},
	t16Cmp:        {id: "cmp_tst", handler: "t16_emulate_loregs_rwflags"},
	t16Addsub:     {id: "shift_add_sub_mov", handler: "t16_emulate_loregs_noitrwflags"},
	t16Logical:    {id: "data_processing", handler: "t16_emulate_loregs_noitrwflags"},
	t16LdrLit:     {id: "ldr_literal", handler: "t16_simulate_ldr_literal"},
	t16Blx:        {id: "bx_blx", handler: "t16_simulate_bxblx"},
	t16Hiregops:   {id: "hireg_ops", custom: cHiregs},
	t16Ldrhstrh:   {id: "ldr_str", handler: "t16_emulate_loregs_rwflags"},
	t16Ldrstr:     {id: "ldr_str_sp", handler: "t16_simulate_ldrstr_sp_relative"},
	t16Adr:        {id: "adr_add_sp", handler: "t16_simulate_reladr"},
	t16Ldmstm:     {id: "ldm_stm", handler: "t16_emulate_loregs_rwflags"},
	t16BranchCond: {id: "b_cond", custom: cCondBranch16},
	t16Branch:     {id: "b", handler: "t16_simulate_branch"},
}

// Stack-use kinds of the checkers' own tables (enum in checkers.h).
const (
	sNone a32Act = iota + 1
	sUnknown
	sFixed0XX
	sT32STRD
	sFixedX0X
	sFixedXXX
	sSTMDX
)

// a32StackARM and a32StackT32: the tables of arm_check_stack and
// t32_check_stack (checkers-arm.c, checkers-thumb.c), walked without
// emulation; each custom entry sets stack_space.
var a32StackARM = &a32Table{name: "arm_check_stack", e: []a32Entry{
	{kind: dOr, mask: 0x0e10000f, value: 0x0600000d},
	{kind: dOr, mask: 0x0e1f0000, value: 0x060d0000},
	{kind: dOr, mask: 0x0e5000bf, value: 0x000000bd},
	{kind: dCustom, mask: 0x0e5f00b0, value: 0x000d00b0, act: sUnknown},
	{kind: dCustom, mask: 0x0edf0000, value: 0x080d0000, act: sSTMDX},
	{kind: dCustom, mask: 0x0f9f0000, value: 0x050d0000, act: sFixedXXX},
	{kind: dCustom, mask: 0x0fdf00b0, value: 0x014d00b0, act: sFixedX0X},
	{kind: dCustom, mask: 0, value: 0, act: sNone},
}}

var a32StackT32 = &a32Table{name: "t32_check_stack", e: []a32Entry{
	{kind: dCustom, mask: 0x00100000, value: 0x00100000, act: sNone},
	{kind: dOr, mask: 0xff9f0fc0, value: 0xf80d0000},
	{kind: dCustom, mask: 0xff900fcf, value: 0xf800000d, act: sUnknown},
	{kind: dCustom, mask: 0xff9f0e00, value: 0xf80d0c00, act: sFixed0XX},
	{kind: dCustom, mask: 0xffdf0000, value: 0xe94d0000, act: sT32STRD},
	{kind: dCustom, mask: 0xffdf0000, value: 0xe90d0000, act: sSTMDX},
	{kind: dCustom, mask: 0, value: 0, act: sNone},
}}

// a32Why says how a walk ended.
type a32Why uint8

const (
	wLeaf   a32Why = iota // a SIMULATE, EMULATE or CUSTOM entry matched
	wReject               // a REJECT entry matched
	wEnd                  // no entry matched
	wRegs                 // decode_regs refused a register
)

// a32Walk is the result of probes_decode_insn's table walk.
type a32Walk struct {
	why    a32Why
	table  *a32Table
	entry  *a32Entry
	insn   uint32 // after decode_regs renamed the registers (emulate)
	regNib int    // wRegs: the nibble (bit position) refused
	regTyp uint32 // wRegs: its constraint
}

// a32Walk walks table for insn like probes_decode_insn, up to the leaf.
func a32WalkTable(top *a32Table, insn uint32, emulate bool) a32Walk {
	t, i, matched := top, 0, false
	for {
		if i >= len(t.e) {
			return a32Walk{why: wEnd, table: t, insn: insn}
		}
		e := &t.e[i]
		i++
		if !matched && insn&e.mask != e.value {
			continue
		}
		if nib, typ, ok := a32DecodeRegs(&insn, e.regs, emulate); !ok {
			return a32Walk{why: wRegs, table: t, entry: e, insn: insn, regNib: nib, regTyp: typ}
		}
		switch e.kind {
		case dTable:
			t, i = e.sub, 0
		case dOr:
			matched = true
		case dReject:
			return a32Walk{why: wReject, table: t, entry: e, insn: insn}
		default:
			return a32Walk{why: wLeaf, table: t, entry: e, insn: insn}
		}
	}
}

// a32DecodeRegs is decode_regs(): it checks each constrained nibble and, when
// modify, renames it (r2 at 19..16, r0 at 15..12, r1 at 11..8, r3 at 3..0).
func a32DecodeRegs(pinsn *uint32, regs uint32, modify bool) (nib int, typ uint32, ok bool) {
	const newBits, sameAs16 = 0x00020103, 0x22222222
	insn := *pinsn
	mask := uint32(0xf)
	for pos := 0; regs != 0; regs, mask, pos = regs>>4, mask<<4, pos+4 {
		nb := uint32(newBits)
		switch t := regs & 0xf; t {
		case rNONE:
			continue
		case rANY:
		case rSAMEAS16:
			nb = sameAs16
		case rSP:
			if (insn^0xdddddddd)&mask != 0 {
				return pos, t, false
			}
		case rPC:
			if (insn^0xffffffff)&mask != 0 {
				return pos, t, false
			}
		case rNOSP:
			if (insn^0xdddddddd)&mask == 0 {
				return pos, t, false
			}
		case rNOSPPC, rNOSPPCX:
			if (insn^0xdddddddd)&0xdddddddd&mask == 0 {
				return pos, t, false
			}
		case rNOPCWB, rNOPC, rNOPCX:
			if t == rNOPCWB && (insn^0x01000000)&0x01200000 == 0 {
				break // no writeback: any register
			}
			if (insn^0xffffffff)&mask == 0 {
				return pos, t, false
			}
		}
		insn = insn&^mask | nb&mask
	}
	if modify {
		*pinsn = insn
	}
	return 0, 0, true
}

// a32StackSpace runs a stack checker on the original instruction.
func a32StackSpace(k a32StackCheck, insn uint32) int {
	switch k {
	case cStackT16:
		return bits.OnesCount32(insn&0x1ff) * 4
	case cStackARM, cStackT32:
		t := a32StackARM
		if k == cStackT32 {
			t = a32StackT32
		}
		w := a32WalkTable(t, insn, false)
		switch w.entry.act {
		case sUnknown:
			return -1
		case sFixed0XX:
			return int(insn & 0xff)
		case sT32STRD:
			return int(insn&0xff) << 2
		case sFixedX0X:
			return int((insn&0xf00)>>4 + insn&0xf)
		case sFixedXXX:
			return int(insn & 0xfff)
		case sSTMDX:
			n := bits.OnesCount32(insn & 0xffff)
			if insn&(1<<24) == 0 {
				n--
			}
			return n * 4
		}
	}
	return 0
}

// a32RegsUsed is register_usage_flags after the ARM register checker.
func a32RegsUsed(k a32RegsCheck, insn, regs uint32) uint32 {
	normal := func() uint32 {
		var f uint32
		for i := 0; i < 5; i, regs, insn = i+1, regs>>4, insn>>4 {
			if regs&0xf != 0 {
				f |= 1 << (insn & 0xf)
			}
		}
		return f
	}
	switch k {
	case cRegsNormal:
		return normal()
	case cRegsNoUse:
		return 0
	case cRegsLdmstm:
		return insn&0xffff | 1<<((insn>>16)&0xf)
	case cRegsMovIPSP:
		return 1<<12 | 1<<13
	case cRegsLdrdstrd:
		rdt := (insn >> 12) & 0xf
		return normal() | 1<<(rdt+1)
	}
	return ^uint32(0)
}

// a32Ldmstm is kprobe_decode_ldmstm(): emulate in the slot with registers
// shifted into a window (good, slot word), or simulate.
func a32Ldmstm(insn uint32) (good bool, slot uint32, handler string) {
	reglist, isLdm, rn := insn&0xffff, insn&0x100000 != 0, (insn>>16)&0xf
	switch {
	case rn <= 12 && reglist&0xe000 == 0:
		handler = "emulate_generic_r0_12_noflags"
	case rn >= 2 && reglist&0x8003 == 0:
		rn, reglist, handler = rn-2, reglist>>2, "emulate_generic_r2_14_noflags"
	case rn >= 3 && reglist&0x0007 == 0:
		if isLdm && reglist&0x8000 != 0 {
			rn, reglist, handler = rn-3, reglist>>3, "emulate_ldm_r3_15"
		}
	}
	if handler != "" {
		return true, insn&0xfff00000 | rn<<16 | reglist, handler
	}
	switch {
	case reglist&0x8000 == 0:
		return false, 0, "simulate_ldm1stm1"
	case isLdm:
		return false, 0, "simulate_ldm1_pc"
	}
	return false, 0, "simulate_stm1_pc"
}

// a32Result is what arch_prepare_kprobe computed for one instruction.
type a32Result struct {
	walk    a32Walk
	good    bool   // INSN_GOOD (a slot) rather than INSN_GOOD_NO_SLOT
	handler string // insn_handler ("" none)
	cc      int    // condition check: 0..14 (probes_condition_checks), 16 thumb_check_cc
	itStep  bool   // Thumb IT: t16_singlestep_it
	stack   int
	used    uint32 // register_usage_flags
	slot    [4]uint16
	slotLen int // bytes
}

// a32Thumb reports whether v (Thumb value order) is a 32-bit instruction.
func a32Thumb32(v uint32) bool { return v>>16 != 0 }

// a32Prepare runs the decode of arch_prepare_kprobe for insn: an A32 word
// (thumb false) or a Thumb value.
func a32Prepare(insn uint32, thumb bool) a32Result {
	var r a32Result
	r.used = ^uint32(0)
	orig := insn
	var top *a32Table
	wide := false
	switch {
	case !thumb:
		top = a32TopARM
		r.cc = int(insn >> 28)
		if r.cc == 15 {
			r.cc = 14 // the table holds __check_al twice
		}
		if insn < 0xe0000000 {
			insn = (insn | 0xe0000000) &^ 0x10000000
		}
	case a32Thumb32(insn):
		top, wide, r.cc = a32TopT32, true, 16
	default:
		top, r.cc = a32TopT16, 16
	}
	r.walk = a32WalkTable(top, insn, true)
	if r.walk.why != wLeaf {
		return r
	}
	e := r.walk.entry
	ai := &a32Acts[e.act]
	// run_checkers, on the original instruction.
	if ai.stack != cStackNone {
		r.stack = a32StackSpace(ai.stack, orig)
	}
	if !thumb {
		r.used = a32RegsUsed(ai.regs, orig, e.regs)
	}
	m := r.walk.insn
	setSlot := func() {
		if !thumb {
			r.slot = [4]uint16{uint16(m), uint16(m >> 16), 0xf00e, 0xe1a0}
			r.slotLen = 8
			return
		}
		r.slot = [4]uint16{uint16(m), 0x4770, 0x4770}
		if wide {
			r.slot[0], r.slot[1] = uint16(m>>16), uint16(m)
		}
		r.slotLen = 6
	}
	switch e.kind {
	case dSimulate:
		r.handler = ai.handler
	case dEmulate:
		r.good, r.handler = true, ai.handler
		setSlot()
	case dCustom:
		switch ai.custom {
		case cLdmstm, cT32Ldmstm:
			var w uint32
			r.good, w, r.handler = a32Ldmstm(m)
			if r.good {
				m = w
				setSlot()
			}
		case cCondBranch16:
			r.cc, r.handler = int(m>>8)&0xf, "t16_simulate_cond_branch"
		case cCondBranch32:
			r.cc, r.handler = int(m>>22)&0xf, "t32_simulate_cond_branch"
		case cIT:
			r.itStep = true
		case cHiregs:
			m = m&^0xff | 1
			r.good, r.handler = true, "t16_emulate_hiregs"
			setSlot()
		case cPush, cPop:
			r.good = true
			h := uint16(0xe929)
			r.handler = "t16_emulate_push"
			if ai.custom == cPop {
				h, r.handler = 0xe8b9, "t16_emulate_pop_nopc"
				if m&0x100 != 0 {
					r.handler = "t16_emulate_pop_pc"
				}
			}
			r.slot = [4]uint16{h, uint16(m & 0x1ff), 0x4770}
			r.slotLen = 6
		}
	}
	return r
}

// a32MaxStack is MAX_STACK_SIZE; a32PtRegs is sizeof(struct pt_regs) on ARM.
const (
	a32MaxStack = 64
	a32PtRegs   = 72
)
