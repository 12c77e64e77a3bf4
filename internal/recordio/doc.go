// Package recordio writes line-oriented outputs (JSON lines, text lines) so
// that whatever kills the writer, the output ends with a whole record: each
// Write call's bytes are one record or several whole ones, and they reach
// the underlying writer in one Write call, never split across two (a
// bufio.Writer splits a record that does not fit what is left of its
// buffer). Records are batched up to the buffer's size, so the number of
// write(2) calls stays that of a bufio.Writer.
//
// On a regular file or a pipe, one write(2) of whole records leaves whole
// records whenever the process is killed between system calls. (A write
// interrupted by SIGKILL inside the kernel can still stop at a page
// boundary; readers of kboost's findings files drop an unterminated last
// line, see internal/campaign.)
package recordio
