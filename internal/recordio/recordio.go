package recordio

import "io"

// Writer batches whole records. It is not safe for concurrent use.
type Writer struct {
	w   io.Writer
	buf []byte
	err error
}

// NewWriter returns a Writer batching up to size bytes (0: every record is
// written at once).
func NewWriter(w io.Writer, size int) *Writer {
	return &Writer{w: w, buf: make([]byte, 0, size)}
}

// Write takes p as whole records (it must end a line): it is appended to
// the batch, or, if the batch cannot take it, the batch is written and p
// starts the next one (or is written at once if larger than the buffer).
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if len(w.buf)+len(p) > cap(w.buf) {
		if err := w.Flush(); err != nil {
			return 0, err
		}
		if len(p) >= cap(w.buf) {
			if _, err := w.w.Write(p); err != nil {
				w.err = err
				return 0, err
			}
			return len(p), nil
		}
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// WriteString is Write of a string.
func (w *Writer) WriteString(s string) (int, error) {
	if len(w.buf)+len(s) <= cap(w.buf) && w.err == nil {
		w.buf = append(w.buf, s...)
		return len(s), nil
	}
	return w.Write([]byte(s))
}

// Flush writes the batch in one Write call.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:0]
	if err != nil {
		w.err = err
	}
	return err
}
