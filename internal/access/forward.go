package access

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// directTCPIPMsg is the payload of a "direct-tcpip" channel open (RFC 4254
// section 7.2).
type directTCPIPMsg struct {
	Host       string
	Port       uint32
	OriginHost string
	OriginPort uint32
}

// loopbackTargets turns a forward's destination into the addresses to dial
// inside the instance, or says why it is refused: only the instance's own
// loopback (127.0.0.0/8, ::1, "localhost") can be reached, never another
// address its network might route to.
func loopbackTargets(host string, port uint32) ([]string, string) {
	if port == 0 || port > 65535 {
		return nil, "port " + strconv.FormatUint(uint64(port), 10) + " is not a TCP port"
	}
	p := strconv.FormatUint(uint64(port), 10)
	if strings.EqualFold(host, "localhost") {
		return []string{net.JoinHostPort("127.0.0.1", p), net.JoinHostPort("::1", p)}, ""
	}
	addr, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil || addr.Zone() != "" {
		return nil, "destination " + host + " is not a loopback address (only 127.0.0.0/8, ::1 and localhost)"
	}
	addr = addr.Unmap()
	if !addr.IsLoopback() {
		return nil, "destination " + host + " is outside the instance (only 127.0.0.0/8, ::1 and localhost)"
	}
	return []string{net.JoinHostPort(addr.String(), p)}, ""
}

func (c *conn) handleForward(nch ssh.NewChannel) {
	m, targets, reason, malformed := parseForward(nch.ExtraData())
	if malformed {
		c.refused(KindForward, "", reason)
		_ = nch.Reject(ssh.ConnectionFailed, "malformed request")
		return
	}
	dest := net.JoinHostPort(m.Host, strconv.FormatUint(uint64(m.Port), 10))
	if reason != "" {
		c.refused(KindForward, dest, reason)
		_ = nch.Reject(ssh.Prohibited, reason)
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, callTimeout)
	var tcp net.Conn
	var err error
	for _, t := range targets {
		if tcp, err = c.srv.dialInstance(ctx, c.instance, t); err == nil {
			dest = t
			break
		}
	}
	cancel()
	if err != nil {
		c.refused(KindForward, dest, "connect: "+err.Error())
		_ = nch.Reject(ssh.ConnectionFailed, "cannot connect to "+dest+" inside the instance")
		return
	}
	defer tcp.Close()
	raw, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	ev := c.event(KindForward, dest)
	c.srv.audit(ev)
	ch := &meteredChannel{Channel: raw, c: c}

	// The client closing the channel, or the connection ending, ends the
	// TCP connection too.
	go func() {
		for req := range reqs {
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
		_ = tcp.Close()
	}()
	stop := context.AfterFunc(c.ctx, func() { _ = tcp.Close() })
	defer stop()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // client -> instance; EOF is passed on as a half close
		defer wg.Done()
		_, _ = io.Copy(tcp, ch)
		if cw, ok := tcp.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	go func() { // instance -> client
		defer wg.Done()
		_, _ = io.Copy(ch, tcp)
		_ = raw.CloseWrite()
	}()
	wg.Wait()
	_ = raw.Close()
	ev.End = time.Now().UTC()
	ev.BytesIn, ev.BytesOut = ch.in.Load(), ch.out.Load()
	c.srv.audit(ev)
}
