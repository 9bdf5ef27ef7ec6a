package sshgate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/quickack"
	"golang.org/x/crypto/ssh"
)

// Gateway is the SSH gateway. Create it with New, run it with Serve, and
// Close it when the process ends.
type Gateway struct {
	cfg  Config
	log  *slog.Logger
	pool *upstreamPool

	mu         sync.Mutex
	perAccount map[string]int

	// anon aggregates refusals of connections that named no account.
	anon anonRefusals
}

// KeyUseRecorder is what a Directory may also implement to record a key's
// last use; the gateway calls it only once the client has signed with the
// key, never when the key is merely offered.
type KeyUseRecorder interface {
	KeyUsed(ctx context.Context, accountID string, key ssh.PublicKey) error
}

// Anonymous refusals (an unknown key, a lookup that failed) name no
// account: anyone can cause them as fast as they can connect. Rather than
// a record each, the gateway keeps the first from each client address in a
// window, at most anonRecordsPerWindow in all, counts the rest, and logs
// the counts when the window ends.
const (
	anonWindow           = 10 * time.Minute
	anonRecordsPerWindow = 100
)

// anonRefusals counts the anonymous refusals of the current window.
type anonRefusals struct {
	mu         sync.Mutex
	start      time.Time
	perHost    map[string]int
	recorded   int
	suppressed int
}

// admit counts a refusal from host at now and reports whether it gets an
// audit record; when a window ends it hands back the last one's counts.
func (a *anonRefusals) admit(host string, now time.Time) (record bool, ended *anonSummary) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.perHost == nil || now.Sub(a.start) >= anonWindow || now.Before(a.start) {
		if a.perHost != nil && a.suppressed > 0 {
			ended = &anonSummary{start: a.start, hosts: len(a.perHost), recorded: a.recorded, suppressed: a.suppressed}
		}
		a.start, a.perHost, a.recorded, a.suppressed = now, map[string]int{}, 0, 0
	}
	n := a.perHost[host]
	if n == 0 && len(a.perHost) >= 10*anonRecordsPerWindow {
		// A flood from many addresses: count it under one key.
		host = "other"
		n = a.perHost[host]
	}
	a.perHost[host] = n + 1
	if n == 0 && a.recorded < anonRecordsPerWindow {
		a.recorded++
		return true, ended
	}
	a.suppressed++
	return false, ended
}

type anonSummary struct {
	start                       time.Time
	hosts, recorded, suppressed int
}

// New checks cfg and returns a gateway.
func New(cfg Config) (*Gateway, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, log: cfg.Logger, perAccount: map[string]int{}}
	g.pool = newUpstreamPool(&g.cfg)
	return g, nil
}

// Close ends the pooled agent connections. Call it after every Serve has
// returned and the port proxy is no longer served.
func (g *Gateway) Close() error {
	g.pool.close()
	return nil
}

// HostKey returns the public host key customers verify.
func (g *Gateway) HostKey() ssh.PublicKey { return g.cfg.HostKey.PublicKey() }

// Serve accepts customer connections on ln until ctx is done, then closes
// ln, ends the open connections (their audit records are written) and
// returns nil. It returns an error only when ln fails.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	backoff := time.Duration(0)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				g.log.Warn("ssh gateway: accept failed; retrying", "err", err, "in", backoff)
				select {
				case <-time.After(backoff):
					continue
				case <-ctx.Done():
					return nil
				}
			}
			cancel()
			return gpurent.WrapError(gpurent.CodeInternal, err, "ssh gateway: accept")
		}
		backoff = 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.handle(ctx, nc)
		}()
	}
}

func (g *Gateway) now() time.Time { return g.cfg.Now().UTC() }

func (g *Gateway) audit(ctx context.Context, r Record) {
	if r.ID == "" {
		r.ID = gpurent.NewID("sess")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	g.cfg.Audit(ctx, r)
}

func (g *Gateway) acquireSlot(account string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perAccount[account] >= g.cfg.MaxSessionsPerAccount {
		return false
	}
	g.perAccount[account]++
	return true
}

func (g *Gateway) releaseSlot(account string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perAccount[account] <= 1 {
		delete(g.perAccount, account)
		return
	}
	g.perAccount[account]--
}

// conn is one customer connection.
type conn struct {
	g          *Gateway
	id         string
	clientAddr string
	start      time.Time

	// Set during authentication (callbacks run on the handshake goroutine).
	refusal     string // the best reason the login was refused, if it is
	refusalAcct string
	refusalKey  string
	refusalUser string
	account     string
	target      Target
	up          *lease
	fingerprint string

	lastActivity atomic.Int64 // unix nanoseconds of the last channel data
	bytesIn      atomic.Int64
	bytesOut     atomic.Int64
	channels     atomic.Int32
	endReason    atomic.Pointer[string]
}

func (c *conn) touch() { c.lastActivity.Store(time.Now().UnixNano()) }

func (c *conn) setEndReason(r string) { c.endReason.CompareAndSwap(nil, &r) }

func (g *Gateway) handle(ctx context.Context, nc net.Conn) {
	defer nc.Close()
	c := &conn{g: g, id: gpurent.NewID("conn"), clientAddr: nc.RemoteAddr().String(), start: g.now()}
	stopOnCancel := context.AfterFunc(ctx, func() { nc.Close() })
	defer stopOnCancel()

	_ = nc.SetDeadline(time.Now().Add(g.cfg.HandshakeTimeout))
	hc, handshakeDone := quickack.Wrap(nc)
	sconn, chans, reqs, err := ssh.NewServerConn(hc, g.serverConfig(ctx, c))
	handshakeDone()
	if err != nil {
		if c.up != nil {
			c.up.release()
			g.releaseSlot(c.account)
		}
		if c.refusal != "" && c.refusalAcct == "" {
			g.refusedAnonymous(ctx, c)
		} else if c.refusal != "" {
			g.log.Info("ssh gateway: login refused", "conn", c.id, "client", c.clientAddr,
				"account", c.refusalAcct, "instance", c.userOr(""), "reason", c.refusal)
			g.audit(ctx, Record{
				ConnID: c.id, AccountID: c.refusalAcct, InstanceID: c.userOr(""), Kind: KindLogin,
				Detail: c.refusalKey, ClientAddr: c.clientAddr, Start: c.start, End: g.now(),
				ExitStatus: -1, Refusal: c.refusal,
			})
		} else {
			g.log.Debug("ssh gateway: handshake failed", "conn", c.id, "client", c.clientAddr, "err", err)
		}
		return
	}
	_ = nc.SetDeadline(time.Time{})
	defer g.releaseSlot(c.account)
	defer c.up.release()
	g.log.Info("ssh gateway: login", "conn", c.id, "client", c.clientAddr, "account", c.account,
		"instance", c.target.InstanceID, "key", c.fingerprint)
	c.touch()

	connCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-connCtx.Done():
			if ctx.Err() != nil {
				c.setEndReason("shutdown")
			}
		case <-c.up.done():
			c.setEndReason("agent connection lost")
		}
		sconn.Close()
	}()
	if g.cfg.KeepaliveInterval > 0 {
		go keepalive(connCtx.Done(), sconn, g.cfg.KeepaliveInterval, g.cfg.KeepaliveCountMax, func() {
			c.setEndReason("keepalive timeout")
			g.log.Info("ssh gateway: client stopped answering keepalives", "conn", c.id, "client", c.clientAddr)
		})
	}
	if g.cfg.IdleTimeout > 0 {
		go c.watchIdle(connCtx, sconn)
	}
	go c.globalRequests(ctx, reqs)

	var chWG sync.WaitGroup
	for nch := range chans {
		if n := c.channels.Add(1); int(n) > g.cfg.MaxChannelsPerConn {
			c.channels.Add(-1)
			_ = nch.Reject(ssh.ResourceShortage, fmt.Sprintf("gpurent: too many open channels on this connection (limit %d)", g.cfg.MaxChannelsPerConn))
			continue
		}
		chWG.Add(1)
		go func() {
			defer chWG.Done()
			defer c.channels.Add(-1)
			c.channel(ctx, nch)
		}()
	}
	if ctx.Err() != nil {
		c.setEndReason("shutdown")
	}
	cancel()
	sconn.Close()
	chWG.Wait()
	end := ""
	if r := c.endReason.Load(); r != nil {
		end = *r
	}
	g.log.Info("ssh gateway: logout", "conn", c.id, "account", c.account, "instance", c.target.InstanceID,
		"bytes_in", c.bytesIn.Load(), "bytes_out", c.bytesOut.Load(), "reason", end)
	g.audit(ctx, Record{
		ConnID: c.id, AccountID: c.account, InstanceID: c.target.InstanceID, Kind: KindLogin,
		Detail: c.fingerprint, ClientAddr: c.clientAddr, Start: c.start, End: g.now(), ExitStatus: -1,
		BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load(), EndReason: end,
	})
}

// refusedAnonymous records a refusal that named no account: the first
// from each client address in a window gets an audit record, the others
// are counted and logged at debug level, and the counts of a window that
// suppressed some are logged when it ends.
func (g *Gateway) refusedAnonymous(ctx context.Context, c *conn) {
	host, _, err := net.SplitHostPort(c.clientAddr)
	if err != nil {
		host = c.clientAddr
	}
	record, ended := g.anon.admit(host, g.now())
	if ended != nil {
		g.log.Warn("ssh gateway: anonymous login refusals (unknown keys) in the last window", "since", ended.start,
			"addresses", ended.hosts, "recorded", ended.recorded, "not_recorded", ended.suppressed)
	}
	if !record {
		g.log.Debug("ssh gateway: login refused (counted, not recorded)", "conn", c.id, "client", c.clientAddr, "reason", c.refusal)
		return
	}
	g.log.Info("ssh gateway: login refused", "conn", c.id, "client", c.clientAddr,
		"instance", c.userOr(""), "reason", c.refusal)
	g.audit(ctx, Record{
		ConnID: c.id, InstanceID: c.userOr(""), Kind: KindLogin, Detail: c.refusalKey, ClientAddr: c.clientAddr,
		Start: c.start, End: g.now(), ExitStatus: -1, Refusal: c.refusal,
	})
}

// user is recorded by the callbacks; before any, the login had no user.
func (c *conn) userOr(def string) string {
	if c.target.InstanceID != "" {
		return c.target.InstanceID
	}
	if c.refusalUser != "" {
		return c.refusalUser
	}
	return def
}

const extAccount = "gpurent-account"

func banner(format string, args ...any) string {
	return "gpurent: " + fmt.Sprintf(format, args...) + "\r\n"
}

// serverConfig builds the per-connection server configuration. Keys are
// looked up when offered; the instance, the limit and the agent are checked
// only once the client has proven it holds the key, so that someone who
// merely knows another customer's public key learns nothing.
func (g *Gateway) serverConfig(ctx context.Context, c *conn) *ssh.ServerConfig {
	conf := &ssh.ServerConfig{
		// AES-GCM first, and no ChaCha20: the client picks the first of its
		// own list the server offers, OpenSSH lists ChaCha20 first, and on
		// servers with AES instructions AES-GCM moves bulk data (scp, -L)
		// about 40% faster through the gateway. CTR modes stay for old
		// clients without GCM.
		Config: ssh.Config{Ciphers: []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com",
			"aes128-ctr", "aes192-ctr", "aes256-ctr"}},
		ServerVersion: "SSH-2.0-gpurent",
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			c.refusalUser = meta.User()
			lctx, cancel := context.WithTimeout(ctx, g.cfg.HandshakeTimeout)
			defer cancel()
			account, err := g.cfg.Directory.AccountForKey(lctx, meta.User(), key)
			if err != nil {
				if gpurent.IsCode(err, gpurent.CodeNotFound) || gpurent.IsCode(err, gpurent.CodeUnauthorized) {
					if c.refusal == "" {
						c.refusal = "unknown key"
						c.refusalKey = ssh.FingerprintSHA256(key)
					}
					return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "unknown public key")
				}
				g.log.Error("ssh gateway: key lookup failed", "conn", c.id, "err", err)
				c.refusal = "key lookup failed"
				c.refusalKey = ssh.FingerprintSHA256(key)
				return nil, &ssh.BannerError{Err: err, Message: banner("keys cannot be checked right now; try again shortly")}
			}
			return &ssh.Permissions{Extensions: map[string]string{extAccount: account}}, nil
		},
		VerifiedPublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey, perms *ssh.Permissions, _ string) (*ssh.Permissions, error) {
			// The client signed with the key: only now is it used.
			if rec, ok := g.cfg.Directory.(KeyUseRecorder); ok {
				lctx, cancel := context.WithTimeout(ctx, g.cfg.HandshakeTimeout)
				err := rec.KeyUsed(lctx, perms.Extensions[extAccount], key)
				cancel()
				if err != nil {
					g.log.Warn("ssh gateway: recording a key's use failed", "conn", c.id, "err", err)
				}
			}
			return g.admit(ctx, c, meta.User(), key, perms)
		},
	}
	conf.AddHostKey(g.cfg.HostKey)
	return conf
}

// admit decides, for a proven key, whether its account may reach the
// instance, and connects to the instance's agent.
func (g *Gateway) admit(ctx context.Context, c *conn, instance string, key ssh.PublicKey, perms *ssh.Permissions) (*ssh.Permissions, error) {
	account := perms.Extensions[extAccount]
	fp := ssh.FingerprintSHA256(key)
	refuse := func(reason, msg string, cause error) (*ssh.Permissions, error) {
		c.refusal, c.refusalAcct, c.refusalKey = reason, account, fp
		if cause == nil {
			cause = errors.New(reason)
		}
		return nil, &ssh.BannerError{Err: cause, Message: msg}
	}
	lctx, cancel := context.WithTimeout(ctx, g.cfg.HandshakeTimeout)
	defer cancel()
	t, err := g.cfg.Directory.Target(lctx, account, instance)
	if err == nil && (t.InstanceID != instance || t.AccountID != account) {
		err = gpurent.Errorf(gpurent.CodeInternal, "directory answered for instance %q of account %q", t.InstanceID, t.AccountID)
	}
	if err != nil {
		switch gpurent.ErrorCode(err) {
		case gpurent.CodeNotFound, gpurent.CodeForbidden:
			// The same words whether it does not exist or is someone else's.
			return refuse("no such instance", banner("there is no instance %q on your account", instance), err)
		case gpurent.CodeConflict:
			// The directory's message says it whole ("instance … is not
			// running: it is stopped").
			return refuse("instance not running: "+gpurent.ErrorMessage(err),
				banner("%s", gpurent.ErrorMessage(err)), err)
		default:
			g.log.Error("ssh gateway: instance lookup failed", "conn", c.id, "instance", instance, "err", err)
			return refuse("instance lookup failed", banner("instance %s cannot be reached right now; try again shortly", instance), err)
		}
	}
	if !g.acquireSlot(account) {
		return refuse("session limit",
			banner("your account already has %d open connections, the limit; close some and retry", g.cfg.MaxSessionsPerAccount), nil)
	}
	up, err := g.pool.acquire(lctx, t)
	if err != nil {
		g.releaseSlot(account)
		return refuse("agent unreachable", banner("the host of instance %s is unreachable; try again shortly", instance), err)
	}
	if c.up != nil { // cannot happen: a success ends authentication
		c.up.release()
		g.releaseSlot(c.account)
	}
	c.refusal, c.refusalAcct, c.refusalKey = "", "", ""
	c.account, c.target, c.up, c.fingerprint = account, t, up, fp
	return perms, nil
}

func (c *conn) watchIdle(ctx context.Context, sconn *ssh.ServerConn) {
	idle := c.g.cfg.IdleTimeout
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			since := time.Since(time.Unix(0, c.lastActivity.Load()))
			if since < idle {
				t.Reset(idle - since)
				continue
			}
			c.setEndReason("idle timeout")
			c.g.log.Info("ssh gateway: idle connection closed", "conn", c.id, "idle", since)
			sconn.Close()
			return
		}
	}
}

// globalRequests refuses every global request: keepalives get a (failure)
// reply, remote forwarding is refused and audited.
func (c *conn) globalRequests(ctx context.Context, reqs <-chan *ssh.Request) {
	for req := range reqs {
		switch req.Type {
		case "tcpip-forward", "streamlocal-forward@openssh.com":
			detail := req.Type
			var fwd struct {
				Addr string
				Port uint32
			}
			if req.Type == "tcpip-forward" && ssh.Unmarshal(req.Payload, &fwd) == nil {
				detail = "remote " + net.JoinHostPort(fwd.Addr, fmt.Sprint(fwd.Port))
			}
			c.refuseChannel(ctx, KindForward, detail, "remote forwarding is not supported")
		}
		if req.WantReply {
			_ = req.Reply(false, nil)
		}
	}
}

func (c *conn) refuseChannel(ctx context.Context, kind Kind, detail, reason string) {
	now := c.g.now()
	c.g.log.Info("ssh gateway: refused", "conn", c.id, "account", c.account, "instance", c.target.InstanceID,
		"kind", kind, "detail", detail, "reason", reason)
	c.g.audit(ctx, Record{
		ConnID: c.id, AccountID: c.account, InstanceID: c.target.InstanceID, Kind: kind, Detail: detail,
		ClientAddr: c.clientAddr, Start: now, End: now, ExitStatus: -1, Refusal: reason,
	})
}
