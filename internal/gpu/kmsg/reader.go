package kmsg

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/gpurent/gpurent"
)

// DefaultPath is the kernel log device.
const DefaultPath = "/dev/kmsg"

// recordBuf holds one /dev/kmsg record: the kernel refuses reads into a
// buffer smaller than the record (its limit is 8 KiB of text plus the
// dictionary).
const recordBuf = 16 << 10

// maxLine bounds a line of a plain file; a longer one is skipped.
const maxLine = 64 << 10

// Record is one Xid report read from the kernel log.
type Record struct {
	PCIBusID string // BusKey form, "0000:3b:00"
	Xid      int
	Detail   string
	At       time.Time // when the reader saw it (UTC)
}

// Reader follows a kernel log. The zero value is not usable: set Path.
type Reader struct {
	// Path is DefaultPath, or a plain file that something appends kernel
	// log lines to (tests, or a copy of the log on a host that keeps
	// /dev/kmsg from the agent).
	Path string
	// Poll is how often a plain file is checked for new lines (default
	// 250 ms). /dev/kmsg needs no polling: its reads wait for a record.
	Poll time.Duration
	// Now stamps records (default time.Now).
	Now func() time.Time
	// Logger receives lost records and read failures (nil: discarded).
	Logger *slog.Logger
}

// Follow opens the log, skips what it holds now, and sends each Xid
// report written afterwards. The channel is closed when ctx ends or the
// log cannot be read any more (logged). Opening failures (no such file, no
// permission: reading /dev/kmsg needs root or CAP_SYSLOG) are returned.
func (r *Reader) Follow(ctx context.Context) (<-chan Record, error) {
	if r.Path == "" {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "kernel log reader: no path")
	}
	f, err := os.Open(r.Path)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "kernel log %s cannot be opened", r.Path)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "kernel log %s", r.Path)
	}
	// On /dev/kmsg, seeking to the end skips the records already there.
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "kernel log %s cannot be read from its end", r.Path)
	}
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := r.Now
	if now == nil {
		now = time.Now
	}
	poll := r.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	out := make(chan Record)
	f2 := follower{path: r.Path, f: f, out: out, log: log.With("kernel_log", r.Path), now: now, poll: poll}
	go func() {
		defer close(out)
		defer f.Close()
		if info.Mode()&os.ModeCharDevice != 0 {
			f2.device(ctx)
		} else {
			f2.file(ctx)
		}
	}()
	return out, nil
}

type follower struct {
	path string
	f    *os.File
	out  chan<- Record
	log  *slog.Logger
	now  func() time.Time
	poll time.Duration
}

// emit parses one line and sends it if it is an Xid report; false when
// ctx ended.
func (fl *follower) emit(ctx context.Context, line string) bool {
	bus, xid, detail, ok := Parse(line)
	if !ok {
		return true
	}
	select {
	case fl.out <- Record{PCIBusID: bus, Xid: xid, Detail: detail, At: fl.now().UTC()}:
		return true
	case <-ctx.Done():
		return false
	}
}

// device reads /dev/kmsg: one record per read, waiting in the runtime's
// poller, so closing the file ends a pending read.
func (fl *follower) device(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { fl.f.Close() })
	defer stop()
	buf := make([]byte, recordBuf)
	for {
		n, err := fl.f.Read(buf)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, syscall.EPIPE):
				// The ring buffer overwrote records before we read them.
				fl.log.Warn("kernel log: records were overwritten before they could be read; Xids may be missed")
				continue
			case errors.Is(err, syscall.EINVAL):
				fl.log.Warn("kernel log: a record too long to read was skipped")
				continue
			default:
				fl.log.Error("kernel log: read failed; no longer following it", "err", err)
				return
			}
		}
		// A record is "prio,seq,usec,flags;message\n" followed by
		// " KEY=value" dictionary lines; Parse finds the message.
		for line := range strings.SplitSeq(string(buf[:n]), "\n") {
			if strings.HasPrefix(line, " ") {
				continue
			}
			if !fl.emit(ctx, line) {
				return
			}
		}
	}
}

// file follows a plain file as `tail -f` does, starting over when it is
// truncated.
func (fl *follower) file(ctx context.Context) {
	rd := bufio.NewReaderSize(fl.f, recordBuf)
	var partial strings.Builder
	skipping := false
	tick := time.NewTicker(fl.poll)
	defer tick.Stop()
	for {
		chunk, err := rd.ReadSlice('\n')
		switch {
		case err == nil || errors.Is(err, bufio.ErrBufferFull):
			if !skipping {
				partial.Write(chunk)
			}
			if partial.Len() > maxLine {
				partial.Reset()
				skipping = true
				fl.log.Warn("kernel log: an overlong line was skipped")
			}
			if err == nil {
				line := partial.String()
				partial.Reset()
				if !skipping && !fl.emit(ctx, strings.TrimRight(line, "\r\n")) {
					return
				}
				skipping = false
			}
			continue
		case errors.Is(err, io.EOF):
			if !skipping {
				partial.Write(chunk) // a line still being written
			}
		default:
			fl.log.Error("kernel log: read failed; no longer following it", "err", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if fl.truncated() {
			if _, err := fl.f.Seek(0, io.SeekStart); err != nil {
				fl.log.Error("kernel log: cannot start over after truncation", "err", err)
				return
			}
			rd.Reset(fl.f)
			partial.Reset()
			skipping = false
		}
	}
}

// truncated reports whether the file is now shorter than what was read.
func (fl *follower) truncated() bool {
	pos, err := fl.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return false
	}
	info, err := fl.f.Stat()
	return err == nil && info.Size() < pos
}
