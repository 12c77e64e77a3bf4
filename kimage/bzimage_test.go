package kimage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// xzCompress runs the xz tool (an independent encoder) on in.
func xzCompress(t testing.TB, in []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(needTool(t, "xz"), append([]string{"-c", "-T1"}, args...)...)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("xz %v: %v", args, err)
	}
	return out
}

// x86Sample returns real x86 machine code: the start of this test binary.
func x86Sample(t testing.TB, n int) []byte {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > n {
		b = b[:n]
	}
	return b
}

func TestDecodeXZAgainstXZTool(t *testing.T) {
	code := x86Sample(t, 1<<20)
	// Tail shorter than 5 bytes after an E8 exercises the unconverted end.
	odd := append(append([]byte{}, code[:4099]...), 0xE8, 0x00, 0x00)
	for _, c := range []struct {
		name string
		in   []byte
		args []string
	}{
		{"bcj-crc32", code, []string{"--check=crc32", "--x86", "--lzma2=preset=0"}},
		{"bcj-crc64", code, []string{"--check=crc64", "--x86", "--lzma2=preset=1"}},
		{"bcj-sha256-start", code, []string{"--check=sha256", "--x86=start=4096", "--lzma2=preset=0"}},
		{"bcj-none-blocks", code, []string{"--check=none", "--block-size=100KiB", "--x86", "--lzma2=preset=0"}},
		{"plain", code, []string{"--lzma2=preset=0"}},
		{"bcj-odd-tail", odd, []string{"--x86", "--lzma2=preset=0"}},
		{"empty", nil, []string{"--x86", "--lzma2=preset=0"}},
	} {
		comp := xzCompress(t, c.in, c.args...)
		got, err := decodeXZ(comp, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(got, c.in) {
			t.Fatalf("%s: decoded %d bytes differ from the %d-byte input", c.name, len(got), len(c.in))
		}
	}
	// Raw LZMA2 streams with other lc/lp/pb and an uncompressible tail (which
	// the encoder stores as uncompressed chunks).
	rnd := make([]byte, 70000)
	rand.New(rand.NewSource(7)).Read(rnd)
	for _, props := range []string{"lc=0,lp=2,pb=0", "lc=4,lp=0,pb=4", "lc=1,lp=3,pb=2"} {
		in := append(append([]byte{}, code[:200000]...), rnd...)
		raw := xzCompress(t, in, "--format=raw", "--lzma2=preset=1,"+props)
		got, n, err := decodeLZMA2(raw, nil, 1<<30)
		if err != nil || n != len(raw) || !bytes.Equal(got, in) {
			t.Fatalf("raw LZMA2 %s: err %v, consumed %d of %d, equal %v", props, err, n, len(raw), bytes.Equal(got, in))
		}
	}
	// Other filters are refused with a typed error.
	comp := xzCompress(t, code[:1000], "--delta=dist=2", "--lzma2=preset=0")
	if _, err := decodeXZ(comp, 0); !errors.Is(err, ErrUnsupportedCompression) {
		t.Errorf("delta filter: %v, want ErrUnsupportedCompression", err)
	}
	// Corruption is detected by the integrity check or the decoder.
	comp = xzCompress(t, code[:100000], "--x86", "--lzma2=preset=0")
	bad := append([]byte{}, comp...)
	bad[len(bad)/2] ^= 0x40
	if _, err := decodeXZ(bad, 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("corrupted stream: %v, want ErrCorrupt", err)
	}
}

// makeBzImage wraps a payload in a minimal x86 boot header (protocol 2.15).
func makeBzImage(payload []byte, version string) []byte {
	const setupSects = 3
	pm := (setupSects + 1) * 512
	b := make([]byte, pm+0x40+len(payload))
	b[bzSetupSects] = setupSects
	copy(b[bzHeaderMagic:], "HdrS")
	binary.LittleEndian.PutUint16(b[bzVersion:], 0x020f)
	copy(b[0x400:], version+"\x00")
	binary.LittleEndian.PutUint16(b[bzKernelVer:], 0x400-0x200)
	binary.LittleEndian.PutUint32(b[bzPayloadOff:], 0x40)
	binary.LittleEndian.PutUint32(b[bzPayloadLen:], uint32(len(payload)))
	copy(b[pm+0x40:], payload)
	return b
}

func sizeAppend(p []byte, n int) []byte {
	return binary.LittleEndian.AppendUint32(append([]byte{}, p...), uint32(n))
}

func TestExtractVmlinux(t *testing.T) {
	path := buildKernelLike(t, 64)
	elfBytes, _ := os.ReadFile(path)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(elfBytes)
	w.Close()
	zw, _ := zstd.NewWriter(nil)
	zs := zw.EncodeAll(elfBytes, nil)
	for _, c := range []struct {
		name    string
		payload []byte
	}{
		{"xz", sizeAppend(xzCompress(t, elfBytes, "--check=crc32", "--x86", "--lzma2=preset=6"), len(elfBytes))},
		{"gzip", gz.Bytes()}, // gzip's own ISIZE trailer doubles as the size
		{"zstd", sizeAppend(zs, len(elfBytes))},
	} {
		img := makeBzImage(c.payload, "6.1.0-99-test (me@example) #1 SMP")
		info, err := ParseBzImage(img)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if info.Compression.String() != c.name || info.KernelVersion != "6.1.0-99-test (me@example) #1 SMP" {
			t.Errorf("%s: info %+v", c.name, info)
		}
		got, err := ExtractVmlinux(img)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(got, elfBytes) {
			t.Fatalf("%s: extracted vmlinux differs", c.name)
		}
		f, err := OpenBytes(img)
		if err != nil {
			t.Fatalf("%s: OpenBytes: %v", c.name, err)
		}
		if f.Kind != KindBzImage || f.Arch.Name != "x86-64" || f.KernelVersion != "6.1.0-99-test" {
			t.Errorf("%s: %v %v %q", c.name, f.Kind, f.Arch, f.KernelVersion)
		}
		if s, ok := f.Symbols.ByName("bug_site"); !ok || s.Addr == 0 {
			t.Errorf("%s: symbols not read from the extracted ELF", c.name)
		}
	}
	// Not an ELF inside: a clear error.
	img := makeBzImage(sizeAppend(xzCompress(t, []byte("not an elf at all"), "--check=crc32"), 17), "x")
	if _, err := ExtractVmlinux(img); !errors.Is(err, ErrCorrupt) {
		t.Errorf("non-ELF payload: %v", err)
	}
	// Unsupported compression is named.
	img = makeBzImage([]byte{0x02, 0x21, 0x4C, 0x18, 1, 2, 3, 4, 5, 6, 7, 8}, "x")
	if _, err := ExtractVmlinux(img); !errors.Is(err, ErrUnsupportedCompression) {
		t.Errorf("lz4 payload: %v", err)
	}
	// Payload fields pointing outside the file.
	img = makeBzImage([]byte{1, 2, 3}, "x")
	binary.LittleEndian.PutUint32(img[bzPayloadLen:], 1<<30)
	if _, err := ExtractVmlinux(img); !errors.Is(err, ErrCorrupt) {
		t.Errorf("payload past end: %v", err)
	}
}

func TestUnBCJShortBuffers(t *testing.T) {
	for n := 0; n < 12; n++ {
		b := bytes.Repeat([]byte{0xE8}, n)
		unBCJX86(b, 0) // must not panic
	}
}
