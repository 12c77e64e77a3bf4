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
