package boost

import (
	"testing"

	"github.com/kboost/kboost/decode"
)

func BenchmarkClassifyInto(b *testing.B) {
	p, _ := Lookup("linux-6.1")
	env := p.DefaultEnv()
	in, _ := decode.Decode([]byte{0x48, 0x8b, 0x05, 1, 2, 3, 4}, decode.Mode64, 0xffffffff81000000)
	var d Decision
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p.ClassifyInto(&d, &in, env)
	}
}

func BenchmarkAuditFunc(b *testing.B) {
	p, _ := Lookup("linux-6.1")
	env := p.DefaultEnv()
	fn := Func{Name: "f", Addr: 0xffffffff81000000, Bytes: testFuncBytes}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := p.AuditFunc(fn, env); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(testFuncOffsets)), "ns/insn")
}
