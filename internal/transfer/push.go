package transfer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/access"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/delta"
)

// Limits of a push.
const (
	// DialTimeout bounds the TCP connect to the target.
	DialTimeout = 15 * time.Second
	// HandshakeTimeout bounds the SSH handshake and login.
	HandshakeTimeout = 30 * time.Second
	// KeepaliveInterval is how often Push asks the target whether it is
	// alive; KeepaliveMax unanswered in a row end the push (a target
	// that vanished without closing the connection).
	KeepaliveInterval = 15 * time.Second
	KeepaliveMax      = 3
	// resultTimeout bounds the wait for the receiver's exit-status once
	// the delta stream has ended.
	resultTimeout = 30 * time.Second
)

// ciphers puts AES-GCM first, as the SSH gateway does: with AES
// instructions it moves bulk data fastest. The client's order decides.
func ciphers() []string {
	return []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com",
		"aes128-ctr", "aes192-ctr", "aes256-ctr"}
}

// PushRequest is one pass of a move, source side.
type PushRequest struct {
	// Addr is the target agent's access server (host:port) and HostKey
	// its host key in authorized_keys form; the key presented must be
	// exactly that one.
	Addr    string
	HostKey string
	// OperationID and Token are the move's: the login's user and password.
	OperationID string
	Token       string
	// Trees are the source directories; Volume is required, an empty
	// Layer is not sent.
	Trees runtime.Trees
	// Final marks the pass made with the instance stopped.
	Final bool
	// Logger receives a line per entry skipped because of an error (nil:
	// discarded).
	Logger *slog.Logger
	// Progress, when set, is told the bytes that crossed the network so
	// far, about every ProgressInterval while the push runs: a pass of a
	// large volume shows it is alive long before it ends.
	Progress func(wireBytes int64)
}

// ProgressInterval is how often a push reports its progress.
const ProgressInterval = time.Second

// PushStats is what a push did. After a failure it holds what was done
// before it.
type PushStats struct {
	// Volume and Layer are the sender's counts of each tree's pass (the
	// receiver's deletions and errors included).
	Volume, Layer delta.Stats
	// BytesSent and BytesReceived are the delta streams' bytes, both
	// trees together; WireBytes what went over TCP both ways, with SSH's
	// handshake, framing and encryption.
	BytesSent, BytesReceived int64
	WireBytes                int64
	// FilesChanged counts the files whose content was sent and the paths
	// deleted at the target, both trees together.
	FilesChanged int64
	// Duration is the whole push, connection set-up included.
	Duration time.Duration
}

func (s *PushStats) add(st delta.Stats) {
	s.BytesSent += st.BytesSent
	s.BytesReceived += st.BytesReceived
	s.FilesChanged += st.FilesTransferred + st.Deleted
}

// Push sends one pass of both trees to the target and returns when the
// target has applied and synced them. Every failure says which step
// failed: the request (invalid), the dial or the stream (unavailable), the
// target's identity or the login (unauthorized), the target refusing or
// failing a pass (forbidden, conflict or unavailable). Cancelling ctx
// closes the connection and ends the push at once.
func Push(ctx context.Context, req PushRequest) (PushStats, error) {
	start := time.Now()
	var stats PushStats
	hostKey, err := checkRequest(req)
	if err != nil {
		return stats, err
	}
	outer := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	client, counter, err := dial(ctx, req, hostKey)
	if err != nil {
		return stats, err
	}
	stop := context.AfterFunc(ctx, func() { _ = client.Close() })
	defer stop()
	defer client.Close()
	go keepalive(ctx, client, req.Addr, cancel)
	if req.Progress != nil {
		go func() {
			t := time.NewTicker(ProgressInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					req.Progress(counter.n.Load())
				}
			}
		}()
	}

	type job struct {
		tree, dir string
		into      *delta.Stats
		err       error
	}
	jobs := []*job{{tree: TreeVolume, dir: req.Trees.Volume, into: &stats.Volume}}
	if req.Trees.Layer != "" {
		jobs = append(jobs, &job{tree: TreeLayer, dir: req.Trees.Layer, into: &stats.Layer})
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			*j.into, j.err = pushTree(ctx, client, req, j.tree, j.dir)
			if j.err != nil && !errors.Is(j.err, cancelled{}) {
				cancel(j.err) // one tree failed: the pass failed, stop the other
			}
		}()
	}
	wg.Wait()
	for _, j := range jobs {
		stats.add(*j.into)
	}
	stats.WireBytes = counter.n.Load()
	stats.Duration = time.Since(start)
	if outer.Err() != nil {
		return stats, gpurent.WrapError(gpurent.CodeUnavailable, outer.Err(), "transfer: push to %s cancelled", req.Addr)
	}
	// The first failure is the cause; the other tree's is its consequence.
	for _, j := range jobs {
		if j.err != nil && !errors.Is(j.err, cancelled{}) {
			return stats, j.err
		}
	}
	if cause := context.Cause(ctx); cause != nil {
		return stats, cause // the keepalive gave up
	}
	return stats, nil
}

// cancelled marks a tree's pass that ended because the push was
// cancelled (by the caller, the keepalive, or the other tree's failure).
type cancelled struct{}

func (cancelled) Error() string { return "cancelled" }

func checkRequest(req PushRequest) (ssh.PublicKey, error) {
	switch {
	case req.Addr == "":
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "transfer: the target address is required")
	case req.OperationID == "" || req.Token == "":
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "transfer: the operation id and token are required")
	case req.Trees.Volume == "":
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "transfer: the volume tree is required")
	}
	key, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(req.HostKey))
	if err != nil || len(bytes.TrimSpace(rest)) != 0 {
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "transfer: the target's host key is not one key in authorized_keys form")
	}
	return key, nil
}

// hostKeyAlgorithms asks the server for the pinned key's own type, so that
// a server with several host keys presents that one.
func hostKeyAlgorithms(key ssh.PublicKey) []string {
	if key.Type() == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	}
	return []string{key.Type()}
}

// countingConn counts the bytes a connection carries both ways.
type countingConn struct {
	net.Conn
	n atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// dial connects, checks the target's host key and logs in.
func dial(ctx context.Context, req PushRequest, want ssh.PublicKey) (*ssh.Client, *countingConn, error) {
	d := net.Dialer{Timeout: DialTimeout, KeepAlive: KeepaliveInterval}
	nc, err := d.DialContext(ctx, "tcp", req.Addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "transfer: dial the target %s: cancelled", req.Addr)
		}
		return nil, nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "transfer: dial the target %s", req.Addr)
	}
	cc := &countingConn{Conn: nc}
	deadline := time.Now().Add(HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })

	var keyOK, asked bool
	var got ssh.PublicKey
	conf := &ssh.ClientConfig{
		Config:            ssh.Config{Ciphers: ciphers()},
		User:              req.OperationID,
		ClientVersion:     "SSH-2.0-gpurent-transfer",
		HostKeyAlgorithms: hostKeyAlgorithms(want),
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			got = key
			if !bytes.Equal(key.Marshal(), want.Marshal()) {
				return gpurent.Errorf(gpurent.CodeUnauthorized, "host key mismatch")
			}
			keyOK = true
			return nil
		},
		Auth: []ssh.AuthMethod{ssh.PasswordCallback(func() (string, error) {
			asked = true
			return req.Token, nil
		})},
	}
	c, chans, reqs, err := ssh.NewClientConn(cc, req.Addr, conf)
	if !stop() || ctx.Err() != nil {
		if c != nil {
			_ = c.Close()
		}
		_ = nc.Close()
		return nil, nil, gpurent.WrapError(gpurent.CodeUnavailable, ctx.Err(), "transfer: connect to the target %s: cancelled", req.Addr)
	}
	if err != nil {
		_ = nc.Close()
		switch {
		case got != nil && !keyOK:
			return nil, nil, gpurent.Errorf(gpurent.CodeUnauthorized,
				"transfer: the target %s presented host key %s, not the expected %s: refusing to send",
				req.Addr, ssh.FingerprintSHA256(got), ssh.FingerprintSHA256(want))
		case keyOK && asked:
			return nil, nil, gpurent.WrapError(gpurent.CodeUnauthorized, loginRefused{err},
				"transfer: the target %s refused the login of operation %s (wrong token, or it does not expect this operation)",
				req.Addr, req.OperationID)
		case keyOK:
			return nil, nil, gpurent.WrapError(gpurent.CodeUnavailable, err,
				"transfer: the target %s does not accept transfer logins (its access server has no transfers configured)", req.Addr)
		}
		return nil, nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "transfer: SSH handshake with the target %s failed", req.Addr)
	}
	_ = nc.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), cc, nil
}

// loginRefused marks the target's refusal of the operation's login: the
// target does not expect the operation (not yet, or no longer), or the
// token is wrong.
type loginRefused struct{ err error }

func (e loginRefused) Error() string { return e.err.Error() }
func (e loginRefused) Unwrap() error { return e.err }

// LoginRefused reports whether err is Push's failure because the target
// refused the operation's login. A target that has not yet prepared for
// the move refuses it too: a source retries such a failure soon, as one
// that says nothing of the data or the network.
func LoginRefused(err error) bool {
	var r loginRefused
	return errors.As(err, &r)
}

// keepalive ends the push (cancel) when the target stops answering.
func keepalive(ctx context.Context, c *ssh.Client, addr string, cancel context.CancelCauseFunc) {
	dead := func(err error) {
		cancel(gpurent.WrapError(gpurent.CodeUnavailable, err, "transfer: the target %s stopped answering keepalives", addr))
		_ = c.Close()
	}
	t := time.NewTicker(KeepaliveInterval)
	defer t.Stop()
	missed := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		replied := make(chan error, 1)
		go func() {
			_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
			replied <- err
		}()
		select {
		case err := <-replied:
			if err != nil {
				dead(err)
				return
			}
			missed = 0
		case <-t.C:
			// Still unanswered a full interval later.
			if missed++; missed >= KeepaliveMax {
				dead(errors.New("keepalives unanswered"))
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// result is the receiver's exit-status for a pass.
type result struct {
	got    bool
	status uint32
}

// pushTree sends one tree on a channel of its own and waits for the
// receiver's answer.
func pushTree(ctx context.Context, client *ssh.Client, req PushRequest, tree, dir string) (delta.Stats, error) {
	pass := PassLive
	if req.Final {
		pass = PassFinal
	}
	what := tree + " " + pass
	ch, reqs, err := client.OpenChannel(access.TransferChannelType, []byte(what))
	if err != nil {
		if ctx.Err() != nil {
			return delta.Stats{}, gpurent.WrapError(gpurent.CodeUnavailable, cancelled{}, "transfer: push %s to %s: cancelled", tree, req.Addr)
		}
		var oce *ssh.OpenChannelError
		if errors.As(err, &oce) {
			code := gpurent.CodeForbidden
			switch oce.Reason {
			case ssh.ResourceShortage:
				code = gpurent.CodeConflict
			case ssh.ConnectionFailed:
				code = gpurent.CodeUnavailable
			}
			return delta.Stats{}, gpurent.WrapError(code, err, "transfer: the target %s refused the %s pass: %s", req.Addr, what, oce.Message)
		}
		return delta.Stats{}, gpurent.WrapError(gpurent.CodeUnavailable, err, "transfer: open the %s channel to %s", tree, req.Addr)
	}
	defer ch.Close()

	// The receiver's message (extended data) and exit-status.
	msgc := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(ch.Stderr(), maxMessage))
		msgc <- string(b)
	}()
	statusc := make(chan result, 1)
	go func() {
		var r result
		for q := range reqs {
			if q.Type == "exit-status" && len(q.Payload) == 4 && !r.got {
				r.got, r.status = true, binary.BigEndian.Uint32(q.Payload)
			}
			if q.WantReply {
				_ = q.Reply(false, nil)
			}
		}
		statusc <- r // the channel is closed
	}()

	st, sendErr := delta.Send(ctx, dir, ch, delta.Options{Final: req.Final, Logger: req.Logger})
	_ = ch.CloseWrite()
	if ctx.Err() != nil {
		return st, gpurent.WrapError(gpurent.CodeUnavailable, cancelled{}, "transfer: push %s to %s: cancelled", tree, req.Addr)
	}
	// The receiver answers, then closes the channel; wait for both.
	var r result
	wait := time.NewTimer(resultTimeout)
	defer wait.Stop()
	select {
	case r = <-statusc:
	case <-wait.C:
	case <-ctx.Done():
		return st, gpurent.WrapError(gpurent.CodeUnavailable, cancelled{}, "transfer: push %s to %s: cancelled", tree, req.Addr)
	}
	_ = ch.Close()
	msg := strings.TrimSpace(<-msgc)

	said := ""
	if r.got && r.status != 0 {
		said = msg
		if said == "" {
			said = "no reason given"
		}
	}
	if sendErr != nil {
		code, msg, cause := unwrap(sendErr)
		if said != "" {
			msg += " (the target says: " + said + ")"
		}
		return st, gpurent.WrapError(code, cause, "transfer: push %s to %s failed: %s", tree, req.Addr, msg)
	}
	switch {
	case said != "":
		return st, gpurent.Errorf(gpurent.CodeUnavailable, "transfer: the target %s failed the %s pass: %s", req.Addr, what, said)
	case !r.got:
		return st, gpurent.Errorf(gpurent.CodeUnavailable, "transfer: the target %s did not confirm the %s pass", req.Addr, what)
	case req.Final && st.Errors > 0:
		return st, gpurent.Errorf(gpurent.CodeInternal, "transfer: the final %s pass skipped %d entries (%s): the copy is incomplete",
			tree, st.Errors, strings.Join(st.ErrorSamples, "; "))
	}
	return st, nil
}

// unwrap splits a delta error into its code, its message and its cause,
// so that a message built on it does not repeat itself.
func unwrap(err error) (gpurent.Code, string, error) {
	var e *gpurent.Error
	if errors.As(err, &e) {
		return e.Code, e.Message, e.Err
	}
	return gpurent.CodeUnavailable, err.Error(), err
}
