// Package render draws kboost's results as pictures: opcode grids (SVG), an
// instruction's fields, rules and slot, a simulated hit, and a whole-binary
// audit report (self-contained HTML, no external assets, no JavaScript
// framework). It takes view models filled by the CLI from the data the boost,
// kernelsim and audit packages computed; it decides nothing itself.
//
// Colours follow the Okabe-Ito palette (safe for the common colour-vision
// deficiencies) and every verdict is also drawn as its letter, so a picture
// reads without colour. Every string is escaped by html/template, and the
// output passes through a filter that replaces invalid UTF-8 and control
// characters, so names taken from a binary cannot break the page nor the XML
// of an SVG.
package render
