// Package jsonv is kboost's JSON vocabulary as Go types: every address is a
// "0x..." hex string (Addr: jq and JavaScript lose precision on 64-bit
// numbers), every byte string is lower-case hex bytes separated by single
// spaces in memory order, as objdump prints them ("48 8b 05": Bytes).
// Both read back what they write; Bytes also reads unspaced hex
// ("488b05"), the form of files written before the vocabulary.
//
// The rest of the vocabulary (rule ids in "reasons", their texts in
// "details", snake_case keys, arch and policy names as the CLI spells them,
// absent rather than empty optional fields) is a convention of the record
// types, checked by the JSON Schema files under schemas/ at the repository
// root (internal/cli's schema test).
package jsonv
