package sshgate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// maxLogsStderr bounds what the gateway keeps of the agent's error line.
const maxLogsStderr = 4 << 10

// Logs streams the startup-command output of instanceID, which accountID
// must own and which must be running (Directory.Target decides, with its
// codes), from the agent of its host: a session channel on the gateway's
// own connection to the agent, the subsystem agentproto.LogsSubsystem, and
// req as one JSON line. The reader ends at the stream's end; an error the
// agent reports (exit-status other than 0, its line on stderr) is the
// reader's last error. Close ends the stream at any time.
func (g *Gateway) Logs(ctx context.Context, accountID, instanceID string, req agentproto.LogsRequest) (io.ReadCloser, error) {
	t, err := g.cfg.Directory.Target(ctx, accountID, instanceID)
	if err != nil {
		return nil, err
	}
	t.InstanceID, t.AccountID = instanceID, accountID
	dctx, cancel := context.WithTimeout(ctx, g.cfg.DialTimeout)
	l, err := g.pool.acquire(dctx, t)
	cancel()
	if err != nil {
		return nil, err
	}
	ch, reqs, err := l.client().OpenChannel("session", nil)
	if err != nil {
		l.release()
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "the host of instance %s refused the logs stream", instanceID)
	}
	s := &logStream{ch: ch, lease: l, exit: make(chan struct{}), errRead: make(chan struct{}), status: -1}
	go s.requests(reqs)
	ok, err := ch.SendRequest("subsystem", true, ssh.Marshal(struct{ Name string }{agentproto.LogsSubsystem}))
	if err != nil || !ok {
		s.Close()
		return nil, gpurent.Errorf(gpurent.CodeUnavailable,
			"the agent of instance %s's host serves no logs (an older agent?): update it", instanceID)
	}
	line, _ := json.Marshal(req)
	if _, err := ch.Write(append(line, '\n')); err != nil {
		s.Close()
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "asking the host of instance %s for its logs", instanceID)
	}
	_ = ch.CloseWrite()
	go func() {
		// The agent's one error line; more is dropped.
		_, _ = io.Copy(&s.stderr, io.LimitReader(ch.Stderr(), maxLogsStderr))
		close(s.errRead)
		_, _ = io.Copy(io.Discard, ch.Stderr())
	}()
	// The end of ctx closes the stream; it may come at once, so the
	// registration is made under stopMu, which Close takes too.
	s.stopMu.Lock()
	s.stop = context.AfterFunc(ctx, func() { s.Close() })
	s.stopMu.Unlock()
	return s, nil
}

// logStream is the reader Logs answers.
type logStream struct {
	ch     ssh.Channel
	lease  *lease
	stopMu sync.Mutex
	stop   func() bool // unregisters the close on ctx's end
	stderr lockedBuffer

	exit    chan struct{} // closed when the agent's requests ended
	errRead chan struct{} // closed when the agent's error line has been read
	status  int           // exit-status, -1 when none came

	closeOnce sync.Once
}

func (s *logStream) requests(reqs <-chan *ssh.Request) {
	defer close(s.exit)
	for r := range reqs {
		if r.Type == "exit-status" {
			var m struct{ Status uint32 }
			if ssh.Unmarshal(r.Payload, &m) == nil {
				s.status = int(m.Status)
			}
		}
		if r.WantReply {
			_ = r.Reply(false, nil)
		}
	}
}

// Read reads the output; at its end it answers io.EOF when the agent
// ended the stream well, otherwise the agent's error.
func (s *logStream) Read(p []byte) (int, error) {
	n, err := s.ch.Read(p)
	if !errors.Is(err, io.EOF) {
		return n, err
	}
	<-s.exit
	if s.status == 0 {
		return n, io.EOF
	}
	// The channel's end also ends its stderr, but the goroutine reading
	// it may not have taken the agent's last line in yet.
	<-s.errRead
	msg := strings.TrimSpace(s.stderr.String())
	if msg == "" {
		msg = "the logs stream ended without an answer"
	}
	return n, gpurent.Errorf(gpurent.CodeUnavailable, "logs: %s", msg)
}

// Close ends the stream and gives the agent connection back to the pool.
func (s *logStream) Close() error {
	s.closeOnce.Do(func() {
		s.stopMu.Lock()
		stop := s.stop
		s.stopMu.Unlock()
		if stop != nil {
			stop()
		}
		_ = s.ch.Close()
		s.lease.release()
	})
	return nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
