package access

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// KindLogs is a session of agentproto.LogsSubsystem: the control plane
// reading the startup command's output of the connection's instance.
const KindLogs Kind = "logs"

// Bounds of a logs request.
const (
	maxLogsRequestBytes = 4 << 10
	maxLogsTail         = 1_000_000
	// logsRequestTimeout bounds the wait for the request line.
	logsRequestTimeout = 30 * time.Second
)

// ParseLogsRequest decodes the one JSON line a logs session starts with
// (without its newline). Outside bytes: bounded, strict.
func ParseLogsRequest(line []byte) (agentproto.LogsRequest, error) {
	var req agentproto.LogsRequest
	if len(line) > maxLogsRequestBytes {
		return req, fmt.Errorf("logs request over %d bytes", maxLogsRequestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return agentproto.LogsRequest{}, fmt.Errorf("logs request: %w", err)
	}
	if dec.More() {
		return agentproto.LogsRequest{}, errors.New("logs request: more than one JSON value")
	}
	if req.Tail < 0 || req.Tail > maxLogsTail {
		return agentproto.LogsRequest{}, fmt.Errorf("logs request: tail must be 0 to %d", maxLogsTail)
	}
	return req, nil
}

// startLogs serves agentproto.LogsSubsystem for the connection's
// instance, and only that one: it reads one LogsRequest line, then copies
// the runtime's logs to the channel until they end (exit-status 0); an
// error is one line on stderr and exit-status 1.
func (s *session) startLogs() bool {
	logger, ok := s.c.srv.cfg.Runtime.(runtime.Logger)
	if !ok {
		s.c.refused(KindLogs, "logs", "this runtime keeps no logs of its instances")
		return false
	}
	if !s.claim() {
		return false
	}
	ev := s.c.event(KindLogs, "logs")
	s.c.srv.audit(ev)
	go func() {
		<-s.replied
		code, err := s.copyLogs(logger)
		if err != nil {
			code = 1
			fmt.Fprintf(s.ch.stderr(), "gpurent logs: %s\n", gpurent.ErrorMessage(err))
		}
		_ = s.raw.CloseWrite()
		_, _ = s.raw.SendRequest("exit-status", false, ssh.Marshal(exitStatusMsg{Status: uint32(code)}))
		_ = s.raw.Close()
		ev.End, ev.ExitCode = time.Now().UTC(), code
		ev.BytesIn, ev.BytesOut = s.ch.in.Load(), s.ch.out.Load()
		if err != nil {
			ev.Err = err.Error()
		}
		s.c.srv.audit(ev)
	}()
	return true
}

func (s *session) copyLogs(logger runtime.Logger) (int, error) {
	line, err := readLine(s.ch, maxLogsRequestBytes, logsRequestTimeout, func() { _ = s.raw.Close() })
	if err != nil {
		return 1, gpurent.WrapError(gpurent.CodeInvalid, err, "read the logs request")
	}
	req, err := ParseLogsRequest(line)
	if err != nil {
		return 1, gpurent.WrapError(gpurent.CodeInvalid, err, "%v", err)
	}
	rc, err := logger.Logs(s.ctx, s.c.instance, runtime.LogOptions{Follow: req.Follow, Since: req.Since, Tail: req.Tail})
	if err != nil {
		return 1, err
	}
	defer rc.Close()
	if _, err := io.Copy(s.ch, rc); err != nil && s.ctx.Err() == nil {
		return 1, gpurent.WrapError(gpurent.CodeUnavailable, err, "stream the logs")
	}
	return 0, nil
}

// readLine reads up to a newline, at most max bytes, within timeout (after
// which it calls expire, which must make r fail).
func readLine(r io.Reader, max int, timeout time.Duration, expire func()) ([]byte, error) {
	t := time.AfterFunc(timeout, expire)
	defer t.Stop()
	br := bufio.NewReaderSize(io.LimitReader(r, int64(max)+1), 512)
	var line []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			return nil, err
		}
		if b == '\n' {
			return line, nil
		}
		if len(line) >= max {
			return nil, fmt.Errorf("no newline within %d bytes", max)
		}
		line = append(line, b)
	}
}
