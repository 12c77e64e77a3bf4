package shard

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard is part K of N (0 <= K < N). The zero value is not a shard; All is
// the whole job.
type Shard struct{ K, N int }

// All is the unsharded job.
var All = Shard{0, 1}

// Parse reads "K/N".
func Parse(s string) (Shard, error) {
	k, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want K/N, e.g. 0/4 (part K of N, counting from 0)", s)
	}
	ki, err1 := strconv.Atoi(k)
	ni, err2 := strconv.Atoi(n)
	switch {
	case err1 != nil || err2 != nil:
		return Shard{}, fmt.Errorf("shard %q: K and N must be integers (K/N, e.g. 0/4)", s)
	case ni < 1:
		return Shard{}, fmt.Errorf("shard %q: N must be at least 1", s)
	case ki < 0 || ki >= ni:
		return Shard{}, fmt.Errorf("shard %q: K must be in 0..%d (shards count from 0)", s, ni-1)
	}
	return Shard{ki, ni}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// Has reports whether item i belongs to the shard.
func (s Shard) Has(i uint64) bool { return s.N <= 1 || i%uint64(s.N) == uint64(s.K) }

// HasName reports whether the item named name belongs to the shard (by the
// FNV-1a hash of the name, the same on every machine and run).
func (s Shard) HasName(name string) bool {
	if s.N <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()%uint64(s.N) == uint64(s.K)
}

// First returns the first item at or after i that belongs to the shard.
func (s Shard) First(i uint64) uint64 {
	if s.N <= 1 {
		return i
	}
	n, k := uint64(s.N), uint64(s.K)
	if r := i % n; r <= k {
		return i - r + k
	}
	return i - i%n + n + k
}
