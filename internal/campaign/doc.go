// Package campaign is the findings file of a `kboost fuzz` campaign, which
// carries what resuming and merging it need: a header record with the
// campaign's parameters, the findings as JSON lines, and periodic
// checkpoint records with the next block of the case stream and the
// running counts. Every record is written with one write call, so a killed
// run leaves whole lines; a reader drops an unterminated last line and the
// findings after the last checkpoint (their block is run again on resume).
package campaign
