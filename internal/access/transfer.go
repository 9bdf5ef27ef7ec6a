package access

import (
	"context"
	"encoding/binary"
	"io"
	"sync"
	"time"
	"unicode"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
)

// TransferChannelType is the type of the SSH channel that carries one pass
// of a moving instance's copy from the source agent to this one (see
// internal/transfer). Its extra data says which tree and which pass, as
// text ("volume live").
const TransferChannelType = "transfer@gpurent"

// KindTransfer is a pass of a move received on a TransferChannelType
// channel, or a refused transfer login. Its Event's Instance holds the
// move's operation id (the login's user), Command the channel's extra data
// ("volume live"), KeyFingerprint is empty, ExitCode the pass's
// exit-status and Err the receiver's message when it failed.
const KindTransfer Kind = "transfer"

// Transfers admits and serves the agent-to-agent copy of moving instances.
// With Config.Transfers set the server also offers password
// authentication, which only Transfers decides; a connection admitted that
// way may open TransferChannelType channels and nothing else.
type Transfers interface {
	// Authorize checks a password login: user is an operation id and
	// password its token. It must not leak through timing how much of
	// the token matched. grant identifies what it admitted and is handed
	// back to ServeChannel; ok false refuses the login.
	Authorize(user string, password []byte) (grant string, ok bool)
	// ServeChannel accepts or rejects one TransferChannelType channel of
	// a connection admitted with grant, serves it and returns when it is
	// done. ctx ends when the connection does. An accepted channel that
	// fails should write the reason on its extended data (Stderr) and
	// send exit-status non-zero, as an exec session would.
	ServeChannel(ctx context.Context, grant string, nch ssh.NewChannel)
}

// extGrant carries a transfer login's grant from authentication to the
// connection; a connection has it exactly when it logged in by password.
const extGrant = "gpurent-transfer-grant"

func (s *Server) checkPassword(meta ssh.ConnMetadata, password []byte) (*ssh.Permissions, error) {
	grant, ok := s.cfg.Transfers.Authorize(meta.User(), password)
	if !ok || grant == "" {
		reason := "transfer login refused: wrong token or no such operation expected"
		s.log.Warn("ssh transfer login refused", "operation", meta.User(), "remote", meta.RemoteAddr().String())
		now := time.Now().UTC()
		s.audit(Event{
			Instance: meta.User(), Kind: KindTransfer, RemoteAddr: meta.RemoteAddr().String(),
			Start: now, End: now, ExitCode: -1, Err: reason,
		})
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "%s", reason)
	}
	return &ssh.Permissions{Extensions: map[string]string{extGrant: grant}}, nil
}

// handleTransferLogin routes a channel of a transfer login: a transfer
// channel to Transfers, anything else refused.
func (c *conn) handleTransferLogin(nch ssh.NewChannel) {
	if nch.ChannelType() != TransferChannelType {
		c.refused(KindTransfer, nch.ChannelType(), "a transfer login may open only "+TransferChannelType+" channels")
		_ = nch.Reject(ssh.Prohibited, "this login may open only "+TransferChannelType+" channels")
		return
	}
	tc := &transferOpen{NewChannel: nch, c: c, what: printable(nch.ExtraData())}
	c.srv.cfg.Transfers.ServeChannel(c.ctx, c.grant, tc)
	tc.finish()
}

// transferOpen hands Transfers a channel open whose accepted channel is
// metered and audited like every other session.
type transferOpen struct {
	ssh.NewChannel
	c    *conn
	what string

	mu       sync.Mutex
	rejected string
	ch       *transferChannel
}

func (t *transferOpen) Accept() (ssh.Channel, <-chan *ssh.Request, error) {
	raw, reqs, err := t.NewChannel.Accept()
	if err != nil {
		return nil, nil, err
	}
	ev := t.c.event(KindTransfer, t.what)
	t.c.log.Info("ssh transfer channel open", "pass", t.what)
	t.c.srv.audit(ev)
	ch := &transferChannel{meteredChannel: &meteredChannel{Channel: raw, c: t.c}, ev: ev}
	t.mu.Lock()
	t.ch = ch
	t.mu.Unlock()
	return ch, reqs, nil
}

func (t *transferOpen) Reject(reason ssh.RejectionReason, message string) error {
	t.mu.Lock()
	t.rejected = message
	t.mu.Unlock()
	return t.NewChannel.Reject(reason, message)
}

// finish reports the channel's end (or its refusal) once Transfers is done
// with it.
func (t *transferOpen) finish() {
	t.mu.Lock()
	ch, rejected := t.ch, t.rejected
	t.mu.Unlock()
	if ch == nil {
		if rejected == "" {
			rejected = "neither accepted nor rejected"
			_ = t.NewChannel.Reject(ssh.ConnectionFailed, "transfer not served")
		}
		t.c.refused(KindTransfer, t.what, rejected)
		return
	}
	_ = ch.Close()
	ev := ch.ev
	ev.End = time.Now().UTC()
	ev.BytesIn, ev.BytesOut = ch.in.Load(), ch.out.Load()
	ch.mu.Lock()
	ev.ExitCode, ev.Err = ch.exit, ch.errText
	ch.mu.Unlock()
	if ev.ExitCode != 0 && ev.Err == "" {
		ev.Err = "transfer pass failed"
	}
	t.c.log.Info("ssh transfer channel closed", "pass", t.what, "exit", ev.ExitCode, "bytes_in", ev.BytesIn)
	t.c.srv.audit(ev)
}

// transferChannel is an accepted transfer channel: metered, and noting the
// exit-status and error text it sends back, for the audit.
type transferChannel struct {
	*meteredChannel
	ev Event

	mu      sync.Mutex
	exit    int
	errText string
}

const maxAuditErr = 1024

func (t *transferChannel) SendRequest(name string, wantReply bool, payload []byte) (bool, error) {
	if name == "exit-status" && len(payload) == 4 {
		t.mu.Lock()
		t.exit = int(binary.BigEndian.Uint32(payload))
		t.mu.Unlock()
	}
	return t.meteredChannel.SendRequest(name, wantReply, payload)
}

func (t *transferChannel) Stderr() io.ReadWriter {
	return &transferStderr{rw: t.meteredChannel.Channel.Stderr(), t: t}
}

type transferStderr struct {
	rw io.ReadWriter
	t  *transferChannel
}

func (s *transferStderr) Read(p []byte) (int, error) { return s.rw.Read(p) }

func (s *transferStderr) Write(p []byte) (int, error) {
	n, err := s.rw.Write(p)
	if n > 0 {
		s.t.out.Add(int64(n))
		s.t.c.touch()
		s.t.mu.Lock()
		if room := maxAuditErr - len(s.t.errText); room > 0 {
			s.t.errText += string(p[:min(n, room)])
		}
		s.t.mu.Unlock()
	}
	return n, err
}

// printable returns b as text for the audit when it is short printable
// text, else a placeholder.
func printable(b []byte) string {
	if len(b) > 64 {
		return "(long channel data)"
	}
	for _, r := range string(b) {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return "(binary channel data)"
		}
	}
	return string(b)
}
