package bodycap

import "io"

// Reader reads at most Left bytes of its body. A read past them fails
// with Err (the caller's, naming what was too large); a body of exactly
// Left bytes reads to its end.
type Reader struct {
	io.ReadCloser
	Left int64
	Err  error
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if r.Left <= 0 {
		// At the limit: only the end of the body may follow.
		var one [1]byte
		if n, err := r.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, r.Err
	}
	if int64(len(p)) > r.Left {
		p = p[:r.Left]
	}
	n, err := r.ReadCloser.Read(p)
	r.Left -= int64(n)
	return n, err
}
