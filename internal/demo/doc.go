// Package demo embeds kboost's demo program: demo.elf, built from src/demo.c by
// src/build.sh with kernel-like flags (-pg -mfentry -mrecord-mcount, IBT). `kboost
// audit` with no file audits it.
package demo
