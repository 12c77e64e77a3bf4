package loader

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/kboost/kboost/boost"
)

// SlotSize is the size of one kprobe instruction slot on x86 (MAX_INSN_SIZE).
const SlotSize = 15

// Names under which kallsyms lists the kernel's slot pages, module
// "__builtin__kprobes": one symbol per page, at the page's address.
const (
	InsnPageSymbol    = "kprobe_insn_page"
	OptinsnPageSymbol = "kprobe_optinsn_page"
	SlotPageModule    = "__builtin__kprobes"
)

// MaxOptimizedLength is the most original bytes an optprobe copies
// (MAX_INSN_SIZE + 4: the last copied instruction may start 4 bytes in).
const MaxOptimizedLength = SlotSize + 4

// SlotPages are snapshots of slot pages, by page address.
type SlotPages map[uint64][]byte

// SlotImage is the predicted slot for the probed instruction inst with
// decision d, when the slot is at slotAddr: the copied instruction rebased
// there (the policy classifies the bytes again with Env.SlotAddr set), then the
// tail of d (int3, or a jmp rel32 back to the next instruction when boosted).
// nil when nothing is written to a slot.
func (p *Predictor) SlotImage(d *boost.Decision, inst []byte, slotAddr uint64) []byte {
	if d.SlotLen == 0 || d.Len == 0 || d.Len > len(inst) {
		return nil
	}
	env := *p.Env
	env.SlotAddr = slotAddr
	if env.Mode == 0 {
		env.Mode = p.Policy.Modes[0]
	}
	c := p.Policy.ClassifyBytesEnv(inst, env.Mode, d.Addr, &env)
	img := make([]byte, 0, d.SlotLen)
	if c.SlotLen >= d.Len {
		img = append(img, c.Slot[:d.Len]...)
	} else {
		img = append(img, d.Slot[:d.Len]...)
	}
	tail := d.Slot[d.Len:d.SlotLen]
	if len(tail) == 5 && tail[0] == 0xE9 {
		next := d.Addr + uint64(d.Len)
		rel := uint32(next - (slotAddr + uint64(d.Len) + 5))
		tail = []byte{0xE9, byte(rel), byte(rel >> 8), byte(rel >> 16), byte(rel >> 24)}
	}
	return append(img, tail...)
}

// SlotMatch is one probe whose kernel slot MatchSlots looks for.
type SlotMatch struct {
	Decision *boost.Decision // the probed instruction's decision
	Inst     []byte          // its original bytes
	// Set by MatchSlots: where the kernel's slot is, its bytes (as many as
	// predicted) and the prediction for that address. Found says the slot was
	// identified by an exact match; otherwise Kernel holds the best candidate
	// (the evidence of a disagreement) or nothing, and Note says which.
	SlotAddr  uint64
	Kernel    []byte
	Predicted []byte
	Found     bool
	Note      string
}

// MatchSlots finds, for each probe, the kernel slot holding it. A probe takes a
// slot that changed between before and after and whose bytes equal the
// prediction for that slot's address; failing that, any slot equal to the
// prediction (a reused slot with the same bytes); failing that, the first
// unclaimed changed slot whose first byte matches, as the kernel's evidence of
// a disagreement.
func (p *Predictor) MatchSlots(probes []*SlotMatch, before, after SlotPages) {
	type slot struct {
		addr    uint64
		b       []byte
		changed bool
		claimed bool
	}
	var slots []*slot
	pages := make([]uint64, 0, len(after))
	for a := range after {
		pages = append(pages, a)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
	for _, pa := range pages {
		b := after[pa]
		old := before[pa]
		for i := 0; i+SlotSize <= len(b); i += SlotSize {
			s := &slot{addr: pa + uint64(i), b: b[i : i+SlotSize]}
			s.changed = len(old) < i+SlotSize || !bytes.Equal(old[i:i+SlotSize], s.b)
			slots = append(slots, s)
		}
	}
	var pending []*SlotMatch
	for _, pm := range probes {
		pm.SlotAddr, pm.Kernel, pm.Predicted, pm.Found, pm.Note = 0, nil, nil, false, ""
		// Bytes that do not depend on the slot address (all but a rebased
		// displacement or a jmp back) filter the candidates cheaply: two slot
		// addresses 0x01010101 apart change every byte of a rebased rel32.
		var ref uint64
		if len(slots) > 0 {
			ref = slots[0].addr
		}
		img0, img1 := p.SlotImage(pm.Decision, pm.Inst, ref), p.SlotImage(pm.Decision, pm.Inst, ref+0x01010101)
		maybe := func(b []byte) bool {
			if len(img0) == 0 || len(img0) != len(img1) || len(img0) > len(b) {
				return false
			}
			for i := range img0 {
				if img0[i] == img1[i] && b[i] != img0[i] {
					return false
				}
			}
			return true
		}
		for pass := 0; pass < 2 && !pm.Found; pass++ {
			for _, s := range slots {
				if s.claimed || (pass == 0 && !s.changed) || !maybe(s.b) {
					continue
				}
				img := p.SlotImage(pm.Decision, pm.Inst, s.addr)
				if len(img) > 0 && bytes.Equal(s.b[:len(img)], img) {
					if pass == 0 {
						s.claimed = true
					}
					pm.SlotAddr, pm.Kernel, pm.Predicted, pm.Found = s.addr, img, img, true
					break
				}
			}
		}
		if !pm.Found {
			pending = append(pending, pm)
		}
	}
	for _, pm := range pending {
		img := p.SlotImage(pm.Decision, pm.Inst, 0)
		for _, s := range slots {
			if s.claimed || !s.changed || len(img) == 0 || s.b[0] != img[0] {
				continue
			}
			s.claimed = true
			img = p.SlotImage(pm.Decision, pm.Inst, s.addr)
			pm.SlotAddr, pm.Predicted = s.addr, img
			pm.Kernel = append([]byte(nil), s.b[:len(img)]...)
			pm.Note = "the kernel's slot differs from the prediction"
			break
		}
		if pm.Kernel == nil {
			pm.Predicted = img
			pm.Note = "no kernel slot found for the prediction"
		}
	}
}

// OptTemplate is the kernel's optprobe template: the code from
// optprobe_template_entry to optprobe_template_end that
// arch_prepare_optimized_kprobe copies to the start of every detour buffer,
// and the fields it then patches (offsets from the entry, from the kernel's
// own optprobe_template_clac, _val and _call symbols):
//
//   - Clac: 3 bytes, a NOP3 replaced with clac (0F 01 CA) when the CPU has
//     SMAP;
//   - Val: 10 bytes, replaced with "mov $op, %rdi" (48 BF imm64), op being the
//     kernel's struct optimized_kprobe (a heap address: not predictable);
//   - Call: 5 bytes, replaced with "call optimized_callback" (E8 rel32).
//
// After the template come the copied instructions (OptLen bytes, RIP-relative
// displacements rebased to where they now are) and a jmp rel32 back to
// addr+OptLen. One detour slot is SlotSize() bytes (MAX_OPTINSN_SIZE).
type OptTemplate struct {
	Entry    uint64 // optprobe_template_entry
	Bytes    []byte // the template, as the kernel has it
	Clac     int
	Val      int
	Call     int
	Callback uint64 // optimized_callback
	SMAP     bool   // the boot CPU has SMAP (/proc/cpuinfo flag "smap")
}

// SlotSize is the size of one detour slot: template, up to
// MaxOptimizedLength copied bytes and the jmp back.
func (t *OptTemplate) SlotSize() int { return len(t.Bytes) + MaxOptimizedLength + 5 }

// Check validates the field offsets against the template's length.
func (t *OptTemplate) Check() error {
	n := len(t.Bytes)
	if n == 0 || n > 512 || t.Clac < 0 || t.Clac+3 > n || t.Val < 0 || t.Val+10 > n || t.Call < 0 || t.Call+5 > n {
		return fmt.Errorf("loader: implausible optprobe template: %d bytes, clac %d, val %d, call %d", n, t.Clac, t.Val, t.Call)
	}
	return nil
}

// DetourImage predicts the detour buffer at detour for an optprobe at addr
// whose original bytes are orig (OptLen of them, from the prediction). known
// marks the bytes kboost predicts; the others (the optimized_kprobe pointer)
// are the kernel's own.
func (p *Predictor) DetourImage(t *OptTemplate, addr uint64, orig []byte, detour uint64) (img []byte, known []bool, err error) {
	if err := t.Check(); err != nil {
		return nil, nil, err
	}
	if len(orig) < 5 || len(orig) > MaxOptimizedLength {
		return nil, nil, fmt.Errorf("loader: %d bytes to copy for an optprobe: want 5 to %d", len(orig), MaxOptimizedLength)
	}
	n := len(t.Bytes)
	img = append(make([]byte, 0, n+len(orig)+5), t.Bytes...)
	known = make([]bool, n, n+len(orig)+5)
	for i := range known {
		known[i] = true
	}
	if t.SMAP {
		copy(img[t.Clac:], []byte{0x0F, 0x01, 0xCA})
	}
	img[t.Val], img[t.Val+1] = 0x48, 0xBF
	for i := t.Val + 2; i < t.Val+10; i++ {
		img[i], known[i] = 0, false
	}
	img[t.Call] = 0xE8
	binary.LittleEndian.PutUint32(img[t.Call+1:], uint32(t.Callback-(detour+uint64(t.Call)+5)))
	// The copied instructions, each rebased to its place in the buffer.
	env := *p.Env
	env.Sites = nil // only the copy matters here, not where the bytes came from
	if env.Mode == 0 {
		env.Mode = p.Policy.Modes[0]
	}
	for k := 0; k < len(orig); {
		env.SlotAddr = detour + uint64(n+k)
		c := p.Policy.ClassifyBytesEnv(orig[k:], env.Mode, addr+uint64(k), &env)
		if c.Len == 0 || k+c.Len > len(orig) || c.SlotLen < c.Len {
			return nil, nil, fmt.Errorf("loader: cannot copy the instruction at %#x for the detour (%s)", addr+uint64(k), c.Verdict)
		}
		img = append(img, c.Slot[:c.Len]...)
		k += c.Len
	}
	end := detour + uint64(len(img))
	img = append(img, 0xE9, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(img[len(img)-4:], uint32(addr+uint64(len(orig))-(end+5)))
	for len(known) < len(img) {
		known = append(known, true)
	}
	return img, known, nil
}

// MaskedHex is img in hex with ".." for the bytes known does not mark.
func MaskedHex(img []byte, known []bool) string {
	var b strings.Builder
	for i, c := range img {
		if i < len(known) && !known[i] {
			b.WriteString("..")
			continue
		}
		fmt.Fprintf(&b, "%02x", c)
	}
	return b.String()
}

// MaskedEqual compares a prediction in MaskedHex form with the kernel's bytes
// in hex: same length, every predicted byte equal, ".." matching anything.
func MaskedEqual(pred, kernel string) bool {
	if pred == "" || len(pred) != len(kernel) || len(pred)%2 != 0 {
		return false
	}
	for i := 0; i+1 < len(pred); i += 2 {
		if pred[i:i+2] == ".." {
			if _, err := hex.DecodeString(kernel[i : i+2]); err != nil {
				return false
			}
			continue
		}
		if !strings.EqualFold(pred[i:i+2], kernel[i:i+2]) {
			return false
		}
	}
	return true
}

// DetourTarget decodes the jmp an optimized probe writes at its address:
// E9 rel32 to the detour buffer. ok is false when b does not start with it.
func DetourTarget(addr uint64, b []byte) (detour uint64, ok bool) {
	if len(b) < 5 || b[0] != 0xE9 {
		return 0, false
	}
	return addr + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(b[1:])))), true
}

// Readback is what the kernel made of an inserted probe, read from
// /proc/kcore next to kboost's prediction for the same addresses.
type Readback struct {
	// The instruction slot on a kprobe_insn_page: the copied instruction
	// (displacement rebased), then int3 or a jmp back. Hex.
	SlotAddr      uint64 `json:"slot_addr,omitempty"`
	Slot          string `json:"slot,omitempty"`
	PredictedSlot string `json:"predicted_slot,omitempty"`
	SlotAgree     *bool  `json:"slot_agree,omitempty"` // nil: no slot expected
	// The detour buffer of an [OPTIMIZED] probe on a kprobe_optinsn_page
	// (see OptTemplate). The prediction is MaskedHex: ".." for the bytes the
	// kernel fills with its own pointer.
	Detour           uint64   `json:"detour,omitempty"`
	OptSlot          string   `json:"optslot,omitempty"`
	PredictedOptSlot string   `json:"predicted_optslot,omitempty"`
	OptSlotAgree     *bool    `json:"optslot_agree,omitempty"` // nil: not optimized either way
	Notes            []string `json:"notes,omitempty"`
}
