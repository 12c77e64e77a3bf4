package kimage

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// x86 boot protocol offsets (Documentation/x86/boot.rst).
const (
	bzSetupSects  = 0x1F1
	bzHeaderMagic = 0x202 // "HdrS"
	bzVersion     = 0x206
	bzKernelVer   = 0x20E // offset of the version string, minus 0x200
	bzPayloadOff  = 0x248 // relative to the protected-mode code
	bzPayloadLen  = 0x24C
	bzMinLen      = 0x250
)

// arm64 Image header: "ARM\x64" at offset 0x38.
const arm64ImageMagicOff = 0x38

// IsBzImage reports whether b starts like an x86 bzImage (boot sector + setup header).
func IsBzImage(b []byte) bool {
	return len(b) >= bzMinLen && string(b[bzHeaderMagic:bzHeaderMagic+4]) == "HdrS"
}

// IsARM64Image reports whether b starts with an arm64 kernel Image header.
func IsARM64Image(b []byte) bool {
	return len(b) >= 0x40 && string(b[arm64ImageMagicOff:arm64ImageMagicOff+4]) == "ARMd"
}

// Compression names the compressor of a kernel payload.
type Compression int

const (
	CompressionNone Compression = iota
	CompressionGzip
	CompressionXZ
	CompressionZstd
	CompressionBzip2
	CompressionLZMA
	CompressionLZ4
	CompressionLZO
)

var compressionNames = [...]string{"none", "gzip", "xz", "zstd", "bzip2", "lzma", "lz4", "lzo"}

func (c Compression) String() string {
	if int(c) < len(compressionNames) {
		return compressionNames[c]
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// sniffCompression recognises a compressed stream by its magic.
func sniffCompression(b []byte) Compression {
	switch {
	case bytes.HasPrefix(b, []byte{0x1F, 0x8B}):
		return CompressionGzip
	case bytes.HasPrefix(b, xzMagic):
		return CompressionXZ
	case bytes.HasPrefix(b, []byte{0x28, 0xB5, 0x2F, 0xFD}):
		return CompressionZstd
	case bytes.HasPrefix(b, []byte("BZh")):
		return CompressionBzip2
	case bytes.HasPrefix(b, []byte{0x5D, 0x00, 0x00}):
		return CompressionLZMA
	case bytes.HasPrefix(b, []byte{0x02, 0x21, 0x4C, 0x18}):
		return CompressionLZ4
	case bytes.HasPrefix(b, []byte{0x89, 'L', 'Z', 'O'}):
		return CompressionLZO
	}
	return CompressionNone
}

// BzImageInfo is what the setup header of a bzImage says.
type BzImageInfo struct {
	Protocol      uint16 // boot protocol version, e.g. 0x020f
	KernelVersion string // the version string the header points at, if any
	PayloadOffset int    // offset of the compressed payload in the file
	PayloadLen    int
	Compression   Compression
}

// ParseBzImage reads the setup header of an x86 bzImage and locates its payload.
func ParseBzImage(b []byte) (*BzImageInfo, error) {
	const what = "bzImage setup header"
	if !IsBzImage(b) {
		return nil, &FormatError{What: what, Off: bzHeaderMagic, Why: `no "HdrS" magic`, Err: ErrFormat}
	}
	info := &BzImageInfo{Protocol: binary.LittleEndian.Uint16(b[bzVersion:])}
	if kv := int(binary.LittleEndian.Uint16(b[bzKernelVer:])); kv != 0 && kv+0x200 < len(b) {
		s := b[kv+0x200:]
		if n := bytes.IndexByte(s, 0); n >= 0 && n < 512 {
			info.KernelVersion = string(s[:n])
		}
	}
	sects := int(b[bzSetupSects])
	if sects == 0 {
		sects = 4
	}
	pm := (sects + 1) * 512
	if pm >= len(b) {
		return nil, corrupt(what, bzSetupSects, "setup (%d sectors) is larger than the file", sects)
	}
	if info.Protocol >= 0x208 {
		off := int(binary.LittleEndian.Uint32(b[bzPayloadOff:]))
		n := int(binary.LittleEndian.Uint32(b[bzPayloadLen:]))
		if off < 0 || n <= 0 || pm+off > len(b) || n > len(b)-pm-off {
			return nil, corrupt(what, bzPayloadOff, "payload [%#x,+%#x) outside the file", pm+off, n)
		}
		info.PayloadOffset, info.PayloadLen = pm+off, n
		info.Compression = sniffCompression(b[pm+off:])
		return info, nil
	}
	// Old protocol: no payload fields; look for the first known magic.
	for _, m := range [][]byte{xzMagic, {0x28, 0xB5, 0x2F, 0xFD}, {0x1F, 0x8B, 0x08}} {
		if i := bytes.Index(b[pm:], m); i >= 0 {
			info.PayloadOffset, info.PayloadLen = pm+i, len(b)-pm-i
			info.Compression = sniffCompression(b[pm+i:])
			return info, nil
		}
	}
	return nil, &FormatError{What: what, Off: int64(pm), Why: "no compressed payload found (protocol < 2.08)", Err: ErrCorrupt}
}

// ExtractVmlinux decompresses the payload of an x86 bzImage ("vmlinuz") and
// returns the ELF vmlinux it contains, in one freshly allocated buffer. XZ
// (including the x86 BCJ filter the kernel build uses), gzip, zstd and bzip2
// payloads are supported.
func ExtractVmlinux(vmlinuz []byte) ([]byte, error) {
	info, err := ParseBzImage(vmlinuz)
	if err != nil {
		return nil, err
	}
	payload := vmlinuz[info.PayloadOffset : info.PayloadOffset+info.PayloadLen]
	out, err := decompress(payload, info.Compression, sizeAppended(payload))
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(out, []byte("\x7fELF")) {
		return nil, &FormatError{What: "bzImage payload", Off: int64(info.PayloadOffset),
			Why: "decompressed payload is not an ELF file", Err: ErrCorrupt}
	}
	return out, nil
}

// sizeAppended returns the uncompressed size the kernel build appends to the
// payload (little-endian u32 in its last four bytes), or 0 when implausible.
func sizeAppended(p []byte) int {
	if len(p) < 8 {
		return 0
	}
	n := int(binary.LittleEndian.Uint32(p[len(p)-4:]))
	if n < len(p) || n > maxDecompressed {
		return 0
	}
	return boundHint(n, len(p))
}

// maxRatio bounds how much memory a size field in the input may make kimage
// preallocate, relative to the compressed size (real kernels compress ~5:1).
const maxRatio = 1024

// outputLimit is the most output kimage accepts from in bytes of compressed
// input: maxRatio times the input (at least 1 MiB), at most maxDecompressed. It
// keeps a small forged input from expanding into gigabytes.
func outputLimit(in int) int {
	n := maxRatio * in
	if n < 1<<20 {
		n = 1 << 20
	}
	if n > maxDecompressed {
		n = maxDecompressed
	}
	return n
}

// boundHint clamps a claimed decompressed size to what in bytes of compressed
// input can plausibly produce; larger outputs still work, by growing.
func boundHint(n, in int) int {
	if lim := maxRatio * in; n > lim {
		n = lim
	}
	if n > maxDecompressed {
		n = maxDecompressed
	}
	return n
}

// decompress decodes a whole compressed buffer into one output buffer.
func decompress(p []byte, c Compression, sizeHint int) ([]byte, error) {
	const what = "compressed payload"
	var r io.Reader
	switch c {
	case CompressionXZ:
		return decodeXZ(p, sizeHint)
	case CompressionGzip:
		zr, err := gzip.NewReader(bytes.NewReader(p))
		if err != nil {
			return nil, corrupt(what, 0, "gzip: %v", err)
		}
		zr.Multistream(false)
		r = zr
	case CompressionZstd:
		// The kernel build appends the 4-byte size after the frame; the zstd
		// reader would take it for a truncated next frame.
		if sizeHint > 0 && len(p) > 4 && !bytes.HasPrefix(p[len(p)-4:], []byte{0x28, 0xB5, 0x2F, 0xFD}) {
			p = p[:len(p)-4]
		}
		zr, err := zstd.NewReader(bytes.NewReader(p), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(outputLimit(len(p)))), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, corrupt(what, 0, "zstd: %v", err)
		}
		defer zr.Close()
		r = zr
	case CompressionBzip2:
		r = bzip2.NewReader(bytes.NewReader(p))
	case CompressionNone:
		return nil, &FormatError{What: what, Off: 0, Why: "no known compression magic", Err: ErrFormat}
	default:
		return nil, &FormatError{What: what, Off: 0, Why: c.String() + " is not supported (gzip, xz, zstd, bzip2 are)", Err: ErrUnsupportedCompression}
	}
	return readAllHint(r, sizeHint, outputLimit(len(p)), what)
}

// readAllHint reads r to EOF into a buffer preallocated to hint bytes; more
// than limit bytes is an error.
func readAllHint(r io.Reader, hint, limit int, what string) ([]byte, error) {
	if hint <= 0 || hint > limit {
		hint = min(1<<20, limit)
	}
	buf := make([]byte, 0, hint+1) // +1: EOF is seen without growing
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, corrupt(what, -1, "output exceeds %d bytes", limit)
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, corrupt(what, -1, "%v", err)
		}
	}
}
