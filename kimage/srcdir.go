package kimage

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// ErrNoLineTables: the file has no DWARF line tables (built without -g, or
// stripped, as Debian's kernel images are).
var ErrNoLineTables = errors.New("no DWARF line tables")

// SourceDirs maps code addresses to the directory of the source file that the
// DWARF line table says they come from: addr2line's answer (without -i, so
// code inlined from a header belongs to the header's directory).
type SourceDirs struct {
	rows []lineRow
	dirs []srcDir
}

type lineRow struct {
	addr uint64
	dir  int32 // index into dirs; -1 ends a sequence
}

type srcDir struct{ full, rel string }

// Len is the number of distinct source directories.
func (s *SourceDirs) Len() int { return len(s.dirs) }

// Lookup is the source directory of the line-table row covering addr: its
// full path, and the path relative to its unit's compilation directory when it
// lies under it (the kernel's "fs", "mm/kasan"; "." for the directory
// itself), else the full path.
func (s *SourceDirs) Lookup(addr uint64) (full, rel string, ok bool) {
	i := sort.Search(len(s.rows), func(i int) bool { return s.rows[i].addr > addr }) - 1
	if i < 0 || s.rows[i].dir < 0 {
		return "", "", false
	}
	d := &s.dirs[s.rows[i].dir]
	return d.full, d.rel, true
}

// elfReader is the ELF file behind f, or nil (an arm64 Image is not ELF).
func (f *File) elfReader() io.ReaderAt {
	if f.Kind != KindELF && !bytes.HasPrefix(f.image, []byte("\x7fELF")) {
		return nil
	}
	if f.image != nil {
		return bytes.NewReader(f.image)
	}
	if ra, ok := f.closer.(io.ReaderAt); ok {
		return ra
	}
	return nil
}

// SourceDirs reads the file's DWARF line tables (compressed sections too).
// The error wraps ErrNoLineTables when there are none, ErrCorrupt when they
// do not parse.
func (f *File) SourceDirs() (s *SourceDirs, err error) {
	ra := f.elfReader()
	if ra == nil {
		return nil, fmt.Errorf("%s: %w (not an ELF file)", f.Path, ErrNoLineTables)
	}
	ef, err := elf.NewFile(ra)
	if err != nil {
		return nil, &FormatError{What: "ELF header", Why: err.Error(), Err: ErrCorrupt}
	}
	if ef.Section(".debug_line") == nil && ef.Section(".zdebug_line") == nil {
		return nil, fmt.Errorf("%s: %w (no .debug_line section: build with -g, or use the -dbg package's vmlinux)", f.Path, ErrNoLineTables)
	}
	d, err := ef.DWARF()
	if err != nil {
		return nil, &FormatError{What: "DWARF", Why: err.Error(), Err: ErrCorrupt}
	}
	s = &SourceDirs{}
	index := map[srcDir]int32{}
	files := map[*dwarf.LineFile]int32{}
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil {
			return nil, &FormatError{What: "DWARF .debug_info", Why: err.Error(), Err: ErrCorrupt}
		}
		if cu == nil {
			break
		}
		r.SkipChildren()
		if cu.Tag != dwarf.TagCompileUnit {
			continue
		}
		lr, err := d.LineReader(cu)
		if err != nil {
			return nil, &FormatError{What: "DWARF .debug_line", Why: err.Error(), Err: ErrCorrupt}
		}
		if lr == nil {
			continue
		}
		comp, _ := cu.Val(dwarf.AttrCompDir).(string)
		var e dwarf.LineEntry
		for {
			if err := lr.Next(&e); err == io.EOF {
				break
			} else if err != nil {
				return nil, &FormatError{What: "DWARF .debug_line", Why: err.Error(), Err: ErrCorrupt}
			}
			if e.EndSequence {
				s.rows = append(s.rows, lineRow{e.Address, -1})
				continue
			}
			if e.File == nil {
				s.rows = append(s.rows, lineRow{e.Address, -1}) // a row with no file: no directory
				continue
			}
			k, ok := files[e.File]
			if !ok {
				name := e.File.Name
				if !path.IsAbs(name) && comp != "" {
					name = path.Join(comp, name) // DWARF 5 names are relative to the unit's directory
				}
				sd := srcDir{full: path.Dir(name)}
				sd.rel = sd.full
				switch {
				case comp == "" || comp == "." || comp == "/":
				case sd.full == comp:
					sd.rel = "."
				case strings.HasPrefix(sd.full, comp+"/"):
					sd.rel = sd.full[len(comp)+1:]
				}
				if k, ok = index[sd]; !ok {
					k = int32(len(s.dirs))
					index[sd] = k
					s.dirs = append(s.dirs, sd)
				}
				files[e.File] = k
			}
			s.rows = append(s.rows, lineRow{e.Address, k})
		}
	}
	if len(s.rows) == 0 {
		return nil, fmt.Errorf("%s: %w (the line tables hold no rows)", f.Path, ErrNoLineTables)
	}
	// Address order; a sequence's end sorts before a row at the same address
	// (the next sequence's start), rows at one address keep table order (the
	// last one covers the address, as addr2line reads it).
	sort.SliceStable(s.rows, func(i, j int) bool {
		a, b := s.rows[i], s.rows[j]
		if a.addr != b.addr {
			return a.addr < b.addr
		}
		return a.dir < 0 && b.dir >= 0
	})
	return s, nil
}
