// Package execrelay keeps a command's output whole through an exec API
// that may cut it short. The Docker Engine, once an exec's process exits,
// waits at most two seconds for the output still in its pipes to be
// copied out, then closes them (moby's daemon/monitor.go): when the copy
// is slow (a slow reader, or a starved daemon on a loaded machine) the
// last tens of kilobytes are lost, with exit status 0. A CI run saw
// 5,000,008 bytes arrive as 4,960,264, cut at a page boundary.
//
// So the runtime does not exec the command itself but the relay (the
// instance's init binary, `exec-relay -- COMMAND...`), which runs it and
// speaks a framed protocol with the agent over the exec's standard
// streams: the command's stdout and stderr and, last, its exit code go up
// in frames; stdin, its end and an acknowledgement come down. The relay
// exits only once the agent acknowledged the exit frame, which arrives
// after every byte of output, so the Engine has nothing left to cut.
//
// The relay runs inside the tenant's container: the agent reads its frames
// as hostile bytes (bounded, every kind checked).
package execrelay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Command is the init binary's subcommand that runs the relay.
const Command = "exec-relay"

// Frame kinds. Up, from the relay: Stdout, Stderr, Exit. Down, from the
// agent: Stdin, StdinEOF, Ack.
const (
	KindStdout   byte = 'o'
	KindStderr   byte = 'e'
	KindExit     byte = 'x' // payload: the exit code, 4 bytes big-endian
	KindStdin    byte = 'i'
	KindStdinEOF byte = 'c'
	KindAck      byte = 'a'
)

// MaxPayload is the largest payload of one frame.
const MaxPayload = 32 << 10

// headerLen is a frame's header: its kind and its payload's length (4
// bytes, big-endian).
const headerLen = 5

// ErrFrame is a stream that is not a sequence of valid frames.
var ErrFrame = errors.New("exec relay: malformed frame")

// WriteFrame writes one frame of kind with payload p (at most MaxPayload
// bytes) in a single Write.
func WriteFrame(w io.Writer, kind byte, p []byte) error {
	if len(p) > MaxPayload {
		return fmt.Errorf("%w: a %d-byte payload", ErrFrame, len(p))
	}
	b := make([]byte, headerLen+len(p))
	b[0] = kind
	binary.BigEndian.PutUint32(b[1:headerLen], uint32(len(p)))
	copy(b[headerLen:], p)
	_, err := w.Write(b)
	return err
}

// ReadFrame reads one frame from r into buf (at least MaxPayload bytes)
// and returns its kind and payload (a slice of buf). At a clean end of
// the stream between frames it returns io.EOF; a stream that ends inside
// a frame, or a frame longer than MaxPayload, is ErrFrame.
func ReadFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, fmt.Errorf("%w: the stream ended inside a header", ErrFrame)
		}
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxPayload || int(n) > len(buf) {
		return 0, nil, fmt.Errorf("%w: a %d-byte payload", ErrFrame, n)
	}
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, fmt.Errorf("%w: the stream ended inside a payload", ErrFrame)
		}
		return 0, nil, err
	}
	return h[0], buf[:n], nil
}

// ExitPayload encodes an exit code for a KindExit frame.
func ExitPayload(code int) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(int32(code)))
}

// Demux is the agent's end of the up stream: an io.Writer that takes the
// relay's standard output (as the Engine delivers it, in pieces of any
// size), parses its frames and writes each payload to Stdout or Stderr.
// When the exit frame comes it records the code and calls OnExit (which
// sends the acknowledgement). Bytes after the exit frame, an unknown kind
// or an oversized frame are ErrFrame.
type Demux struct {
	Stdout, Stderr io.Writer
	OnExit         func(code int)

	pending []byte
	exited  bool
	code    int
}

// Write parses p (with what an earlier Write left of a frame).
func (d *Demux) Write(p []byte) (int, error) {
	d.pending = append(d.pending, p...)
	for len(d.pending) >= headerLen {
		n := binary.BigEndian.Uint32(d.pending[1:headerLen])
		if n > MaxPayload {
			return 0, fmt.Errorf("%w: a %d-byte payload", ErrFrame, n)
		}
		if len(d.pending) < headerLen+int(n) {
			break
		}
		kind, payload := d.pending[0], d.pending[headerLen:headerLen+int(n)]
		if d.exited {
			return 0, fmt.Errorf("%w: a frame after the exit", ErrFrame)
		}
		var err error
		switch kind {
		case KindStdout:
			_, err = d.Stdout.Write(payload)
		case KindStderr:
			_, err = d.Stderr.Write(payload)
		case KindExit:
			if len(payload) != 4 {
				return 0, fmt.Errorf("%w: an exit frame of %d bytes", ErrFrame, len(payload))
			}
			d.exited, d.code = true, int(int32(binary.BigEndian.Uint32(payload)))
			if d.OnExit != nil {
				d.OnExit(d.code)
			}
		default:
			return 0, fmt.Errorf("%w: kind %q", ErrFrame, kind)
		}
		if err != nil {
			return 0, err
		}
		// Keep the buffer from growing: move what is left to its front.
		rest := copy(d.pending, d.pending[headerLen+int(n):])
		d.pending = d.pending[:rest]
	}
	return len(p), nil
}

// Exit reports the exit code, once the exit frame has come.
func (d *Demux) Exit() (int, bool) { return d.code, d.exited }
