package shard

import "testing"

func TestParse(t *testing.T) {
	for _, bad := range []string{"", "1", "a/4", "1/b", "0/0", "-1/4", "4/4", "5/4", "1/-2", "1/2/3"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	s, err := Parse("3/4")
	if err != nil || s != (Shard{3, 4}) || s.String() != "3/4" {
		t.Fatalf("Parse(3/4) = %v, %v", s, err)
	}
}

// Every item belongs to exactly one shard, and First walks a shard's items.
func TestPartition(t *testing.T) {
	const n = 5
	names := []string{"vfs_read", "vfs_write", "do_sys_open", "schedule", "a", ""}
	for i := uint64(0); i < 100; i++ {
		k, kn := 0, 0
		for j := 0; j < n; j++ {
			s := Shard{j, n}
			if s.Has(i) {
				k++
			}
			if int(i) < len(names) && s.HasName(names[i]) {
				kn++
			}
			if f := s.First(i); f < i || !s.Has(f) || f-i >= n {
				t.Errorf("%v.First(%d) = %d", s, i, f)
			}
		}
		if k != 1 || (int(i) < len(names) && kn != 1) {
			t.Errorf("item %d in %d shards (by name: %d)", i, k, kn)
		}
	}
}
