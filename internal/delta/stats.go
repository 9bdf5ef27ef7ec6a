package delta

import (
	"context"
	"io"
	"log/slog"
	"time"
)

// Options tune a pass. The zero value is a live pass that deletes what the
// source does not have.
type Options struct {
	// Final says the source is no longer written (the instance is
	// stopped): mtimes are copied exactly. In a live pass (false) files
	// that changed while read, or less than a second before, get an
	// mtime that makes the next pass send them again. Sender side.
	Final bool
	// KeepExtraneous keeps paths the destination has and the source does
	// not; by default they are deleted. Receiver side.
	KeepExtraneous bool
	// Logger, when set, gets one line per entry skipped because of an
	// error.
	Logger *slog.Logger
}

// Stats counts what a pass did. Both sides fill in what they know; counts
// of the other side arrive in the protocol (the sender learns the
// receiver's deletions and errors at the end).
type Stats struct {
	FilesSeen        int64 // entries in the source tree
	FilesTransferred int64 // regular files whose content was sent
	LiteralBytes     int64 // file bytes sent as literal data
	MatchedBytes     int64 // file bytes rebuilt from blocks the destination had
	BytesSent        int64 // bytes this side wrote to the stream
	BytesReceived    int64 // bytes this side read from the stream
	Deleted          int64 // destination paths removed (a directory counts once)
	Vanished         int64 // source files gone between listing and sending
	Unstable         int64 // files that changed while read (the next pass sends them again)
	Errors           int64 // entries skipped because of an error, on either side
	XattrsSkipped    int64 // xattrs the destination filesystem refused
	DevicesSkipped   int64 // device nodes refused by the receiver (all but overlay whiteouts)
	// ErrorSamples holds the first few error messages of this side.
	ErrorSamples []string
}

const maxSamples = 8

func (s *Stats) fail(log *slog.Logger, err error) {
	s.Errors++
	if len(s.ErrorSamples) < maxSamples {
		s.ErrorSamples = append(s.ErrorSamples, err.Error())
	}
	if log != nil {
		log.Warn("delta: entry skipped", "err", err)
	}
}

// watch makes ctx cancellation interrupt blocked reads and writes on conn:
// through a past deadline when conn has SetDeadline, else by closing it
// when it is an io.Closer. The returned function stops watching.
func watch(ctx context.Context, conn io.ReadWriter) func() bool {
	return context.AfterFunc(ctx, func() { interrupt(conn) })
}

func interrupt(conn io.ReadWriter) {
	if d, ok := conn.(interface{ SetDeadline(time.Time) error }); ok {
		if d.SetDeadline(time.Unix(1, 0)) == nil {
			return
		}
	}
	if c, ok := conn.(io.Closer); ok {
		c.Close()
	}
}
