// Package recordio writes line-oriented outputs (JSON lines, text lines) so
// that whatever kills the writer, the output ends with a whole record: each
// Write call's bytes are one record or several whole ones, and they reach
// the underlying writer in one Write call, never split across two (a
// bufio.Writer splits a record that does not fit what is left of its
// buffer). Records are batched up to the buffer's size, so the number of
// write(2) calls stays that of a bufio.Writer.
//
// On a regular file or a pipe, one write(2) of whole records leaves whole
// records whenever the process is killed between system calls. A write
// that SIGKILL interrupts inside the kernel can still stop at a folio
// boundary (generic_perform_write in mm/filemap.c checks
// fatal_signal_pending before each folio-sized chunk and returns what it
// wrote; a pipe write beyond PIPE_BUF is not atomic either), so readers of
// kboost's findings files drop an unterminated last line (internal/campaign).
package recordio
