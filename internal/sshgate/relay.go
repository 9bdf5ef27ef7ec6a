package sshgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// closeGrace bounds how long a half-finished copy may drain after its side of
// a channel closed, before the other side is closed anyway.
const closeGrace = 5 * time.Second

func (c *conn) channel(ctx context.Context, nch ssh.NewChannel) {
	switch nch.ChannelType() {
	case "session":
		c.session(ctx, nch)
	case "direct-tcpip":
		c.directTCPIP(ctx, nch)
	case "direct-streamlocal@openssh.com":
		c.refuseChannel(ctx, KindForward, "unix socket", "forwarding to unix sockets is not supported")
		_ = nch.Reject(ssh.Prohibited, "gpurent: forwarding to unix sockets is not supported; forward a TCP port on 127.0.0.1")
	default:
		c.g.log.Info("ssh gateway: refused channel type", "conn", c.id, "type", nch.ChannelType())
		_ = nch.Reject(ssh.UnknownChannelType, fmt.Sprintf("gpurent: channel type %q is not supported", nch.ChannelType()))
	}
}

// counter counts the bytes of one direction and marks the connection active.
type counter struct {
	c *conn
	n atomic.Int64
	// total is the connection's total for this direction.
	total *atomic.Int64
}

func (k *counter) copy(dst io.Writer, src io.Reader) error {
	buf := make([]byte, 64<<10)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			k.c.touch()
			k.n.Add(int64(n))
			k.total.Add(int64(n))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return nil
			}
			return rerr
		}
	}
}

// sessionState is what the audit record of a session channel collects.
type sessionState struct {
	mu         sync.Mutex
	kind       Kind
	detail     string
	exitStatus int
	exitSignal string
}

func (s *sessionState) set(kind Kind, detail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kind == KindSession {
		s.kind, s.detail = kind, detail
	}
}

func (c *conn) openUpstream(ctx context.Context, nch ssh.NewChannel, payload []byte) (ssh.Channel, <-chan *ssh.Request, bool) {
	up, upReqs, err := c.up.client().OpenChannel(nch.ChannelType(), payload)
	if err != nil {
		var oce *ssh.OpenChannelError
		if errors.As(err, &oce) {
			_ = nch.Reject(oce.Reason, oce.Message)
		} else {
			_ = nch.Reject(ssh.ConnectionFailed, "gpurent: the host of the instance is unreachable")
		}
		c.g.log.Info("ssh gateway: agent refused channel", "conn", c.id, "type", nch.ChannelType(), "err", err)
		return nil, nil, false
	}
	return up, upReqs, true
}

// session relays a session channel and its requests both ways.
func (c *conn) session(ctx context.Context, nch ssh.NewChannel) {
	start := c.g.now()
	up, upReqs, ok := c.openUpstream(ctx, nch, nch.ExtraData())
	if !ok {
		return
	}
	ch, chReqs, err := nch.Accept()
	if err != nil {
		up.Close()
		return
	}
	st := &sessionState{kind: KindSession, exitStatus: -1}
	in := &counter{c: c, total: &c.bytesIn}
	out := &counter{c: c, total: &c.bytesOut}

	// Customer → instance: stdin; EOF is passed on.
	inDone := make(chan struct{})
	go func() {
		defer close(inDone)
		_ = in.copy(up, ch)
		_ = up.CloseWrite()
	}()
	// Instance → customer: stdout and stderr, then EOF once both ended.
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = out.copy(ch.Stderr(), up.Stderr())
		}()
		_ = out.copy(ch, up)
		wg.Wait()
		_ = ch.CloseWrite()
	}()

	// Customer's requests go to the agent, the agent's replies come back.
	// replyMu is held while a request waits for its answer, so that what the
	// request started (an exit status, the close) never overtakes the answer.
	var replyMu sync.Mutex
	custDone := make(chan struct{})
	go func() {
		defer close(custDone)
		for req := range chReqs {
			switch req.Type {
			case "x11-req", "auth-agent-req@openssh.com":
				// The instance never gets a way back into the customer's machine.
				if req.WantReply {
					_ = req.Reply(false, nil)
				}
				continue
			case "subsystem":
				if reservedSubsystem(req.Type, req.Payload) {
					// The platform's subsystems (the logs stream) are the
					// gateway's to ask for; customers use the API.
					c.g.log.Warn("ssh gateway: refused a customer's request for a platform subsystem",
						"conn", c.id, "instance", c.target.InstanceID)
					st.set(KindSubsystem, "refused: platform subsystem")
					if req.WantReply {
						_ = req.Reply(false, nil)
					}
					continue
				}
				if kind, detail, ok := sessionRequestKind(req.Type, req.Payload); ok {
					st.set(kind, detail)
				}
			default:
				if kind, detail, ok := sessionRequestKind(req.Type, req.Payload); ok {
					st.set(kind, detail)
				}
			}
			replyMu.Lock()
			ok, err := up.SendRequest(req.Type, req.WantReply, req.Payload)
			if req.WantReply {
				_ = req.Reply(ok && err == nil, nil)
			}
			replyMu.Unlock()
		}
		// The customer closed the channel (or the connection is gone): let
		// what it sent drain, then close the agent's side.
		waitBounded(inDone)
		up.Close()
	}()

	// The agent's requests (exit-status, exit-signal, ...) go to the
	// customer, after all the output that preceded them.
	for req := range upReqs {
		switch req.Type {
		case "exit-status", "exit-signal":
			<-outDone
			st.mu.Lock()
			if req.Type == "exit-status" {
				var m struct{ Status uint32 }
				if ssh.Unmarshal(req.Payload, &m) == nil {
					st.exitStatus = int(m.Status)
				}
			} else {
				var m struct {
					Signal     string
					CoreDumped bool
					Message    string
					Lang       string
				}
				if ssh.Unmarshal(req.Payload, &m) == nil {
					st.exitSignal = m.Signal
				}
			}
			st.mu.Unlock()
			replyMu.Lock()
			_, _ = ch.SendRequest(req.Type, false, req.Payload)
			replyMu.Unlock()
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		default:
			ok, err := ch.SendRequest(req.Type, req.WantReply, req.Payload)
			if req.WantReply {
				_ = req.Reply(ok && err == nil, nil)
			}
		}
	}
	// The agent closed the channel: pass the rest of the output on, then
	// close the customer's side.
	waitBounded(outDone)
	replyMu.Lock()
	ch.Close()
	replyMu.Unlock()
	<-custDone
	<-inDone

	st.mu.Lock()
	rec := Record{
		ConnID: c.id, AccountID: c.account, InstanceID: c.target.InstanceID, Kind: st.kind, Detail: st.detail,
		ClientAddr: c.clientAddr, Start: start, End: c.g.now(), ExitStatus: st.exitStatus, ExitSignal: st.exitSignal,
		BytesIn: in.n.Load(), BytesOut: out.n.Load(),
	}
	st.mu.Unlock()
	c.g.log.Info("ssh gateway: session ended", "conn", c.id, "instance", rec.InstanceID, "kind", rec.Kind,
		"exit", rec.ExitStatus, "bytes_in", rec.BytesIn, "bytes_out", rec.BytesOut)
	c.g.audit(ctx, rec)
}

func waitBounded(done <-chan struct{}) {
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// directTCPIPMsg is the payload of a direct-tcpip channel open (RFC 4254 7.2).
type directTCPIPMsg struct {
	Host     string
	Port     uint32
	OrigHost string
	OrigPort uint32
}

// loopbackDestination returns the literal loopback address host names, or
// ok=false for anything outside the instance. No name is resolved except
// "localhost", which always means 127.0.0.1.
func loopbackDestination(host string) (string, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(h, "localhost") || strings.EqualFold(h, "localhost.") {
		return "127.0.0.1", true
	}
	if strings.Contains(h, "%") { // zoned addresses are link-local, never loopback
		return "", false
	}
	ip := net.ParseIP(h)
	if ip == nil || !ip.IsLoopback() {
		return "", false
	}
	return ip.String(), true
}

// directTCPIP relays a TCP forward to the instance's loopback.
func (c *conn) directTCPIP(ctx context.Context, nch ssh.NewChannel) {
	m, asked, reason, malformed := parseForward(nch.ExtraData())
	if malformed {
		_ = nch.Reject(ssh.ConnectionFailed, "gpurent: "+reason)
		return
	}
	if reason != "" {
		c.refuseChannel(ctx, KindForward, asked, reason)
		_ = nch.Reject(ssh.Prohibited, fmt.Sprintf(
			"gpurent: forwarding to %s refused; only ports on the instance's own loopback (127.0.0.1, ::1, localhost) can be forwarded", asked))
		return
	}
	dest := net.JoinHostPort(m.Host, strconv.FormatUint(uint64(m.Port), 10))
	start := c.g.now()
	up, upReqs, ok := c.openUpstream(ctx, nch, ssh.Marshal(&m))
	if !ok {
		c.refuseChannel(ctx, KindForward, dest, "nothing accepted the connection inside the instance")
		return
	}
	ch, chReqs, err := nch.Accept()
	if err != nil {
		up.Close()
		return
	}
	in := &counter{c: c, total: &c.bytesIn}
	out := &counter{c: c, total: &c.bytesOut}
	inDone := make(chan struct{})
	outDone := make(chan struct{})
	go func() {
		defer close(inDone)
		_ = in.copy(up, ch)
		_ = up.CloseWrite()
	}()
	go func() {
		defer close(outDone)
		_ = out.copy(ch, up)
		_ = ch.CloseWrite()
	}()
	// A side that closes the whole channel ends the forward.
	custGone := make(chan struct{})
	go func() {
		defer close(custGone)
		ssh.DiscardRequests(chReqs)
		waitBounded(inDone)
		up.Close()
	}()
	ssh.DiscardRequests(upReqs)
	waitBounded(outDone)
	ch.Close()
	<-custGone
	<-inDone
	<-outDone
	up.Close()
	c.g.audit(ctx, Record{
		ConnID: c.id, AccountID: c.account, InstanceID: c.target.InstanceID, Kind: KindForward, Detail: dest,
		ClientAddr: c.clientAddr, Start: start, End: c.g.now(), ExitStatus: -1,
		BytesIn: in.n.Load(), BytesOut: out.n.Load(),
	})
}
