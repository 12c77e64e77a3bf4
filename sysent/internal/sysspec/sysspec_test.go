package sysspec

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse: no panic on any input, and what parses writes back parseable.
func FuzzParse(f *testing.F) {
	f.Add("proto sys_read fd:fd buf:ptr count:uint\narch x86-64\n0 read sys_read\n")
	f.Add("arch i386\n1 exit -\n")
	f.Add("7 x y\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := s.Write(&b); err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(&b); err != nil {
			t.Fatalf("written spec does not parse: %v", err)
		}
	})
}

func TestParseGenericConditionals(t *testing.T) {
	src := `#define __NR_a 0
__SYSCALL(__NR_a, sys_a)
#ifdef __ARCH_WANT_X
#define __NR_b 1
__SYSCALL(__NR_b, sys_b)
#endif
#if defined(__ARCH_WANT_Y) || __BITS_PER_LONG != 32
#define __NR3264_c 2
__SC_3264(__NR3264_c, sys_c32, sys_c64)
#endif
#if __BITS_PER_LONG == 64 && !defined(__SYSCALL_COMPAT)
#define __NR_c __NR3264_c
#else
#define __NR_c64 __NR3264_c
#endif
`
	es, err := parseGeneric([]byte(src), map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Name != "a" || es[1].Name != "c" || es[1].Nr != 2 || es[1].Entry != "sys_c64" {
		t.Fatalf("got %+v", es)
	}
}
