package kimage

import (
	"os"
	"testing"
)

// BenchmarkExtractVmlinux decompresses the vmlinuz named by KIMAGE_BENCH_VMLINUZ.
func BenchmarkExtractVmlinux(b *testing.B) {
	p := os.Getenv("KIMAGE_BENCH_VMLINUZ")
	if p == "" {
		b.Skip("set KIMAGE_BENCH_VMLINUZ to a bzImage")
	}
	z, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		v, err := ExtractVmlinux(z)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(v)))
	}
}

// BenchmarkIndexNames builds the name index of the kallsyms file named by
// KIMAGE_BENCH_KALLSYMS (what the first look-ups by name of an audit pay).
func BenchmarkIndexNames(b *testing.B) {
	p := os.Getenv("KIMAGE_BENCH_KALLSYMS")
	if p == "" {
		b.Skip("set KIMAGE_BENCH_KALLSYMS to a kallsyms file")
	}
	st, err := LoadSymbols(p)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var x nameIndex
		x.build(st.syms)
	}
	b.ReportMetric(float64(len(st.syms)), "symbols")
}
