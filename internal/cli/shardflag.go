package cli

import "github.com/kboost/kboost/internal/shard"

// parseShard reads a --shard value ("" is the whole job).
func parseShard(s string) (shard.Shard, error) {
	if s == "" {
		return shard.All, nil
	}
	sh, err := shard.Parse(s)
	if err != nil {
		return sh, usagef("--shard: %v", err)
	}
	return sh, nil
}
