// Package shard splits a job into N deterministic parts: `--shard K/N`
// takes the items whose index (a fuzz campaign's blocks) or whose name's
// stable hash (an audit's functions) is K modulo N. The N shards together
// take every item exactly once, on any machine.
package shard
