package delta

import (
	"context"
	"errors"
	"net"

	"github.com/gpurent/gpurent"
)

// Copy makes dst (an existing directory) equal to src on the same host,
// by running Send and Receive over an in-memory pipe: the same code path,
// checks and metadata as a copy between hosts. The copy is final (src is
// expected not to change), and a file that could not be copied is an error.
func Copy(ctx context.Context, src, dst string) (Stats, error) {
	return CopyPass(ctx, src, dst, true)
}

// CopyPass is Copy as one pass of an incremental copy: a live pass (final
// false) may run while src changes; files that changed while read, or
// could not be read, are left for the next pass rather than failing it.
// The final pass, with src no longer written, is exact and strict.
func CopyPass(ctx context.Context, src, dst string, final bool) (Stats, error) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sent := make(chan error, 1)
	go func() {
		_, err := Send(ctx, src, a, Options{Final: final})
		if err != nil {
			cancel()
		}
		sent <- err
	}()
	st, err := Receive(ctx, dst, b, Options{})
	if err != nil {
		cancel()
	}
	err = errors.Join(err, <-sent)
	if err == nil && final && st.Errors > 0 {
		err = gpurent.Errorf(gpurent.CodeUnavailable, "%d files could not be copied (first: %v)", st.Errors, st.ErrorSamples)
	}
	return st, err
}
