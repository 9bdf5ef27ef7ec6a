package access

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/quickack"
)

// SFTPHelperCommand is the hidden subcommand of the gpurent binary that
// runs ServeSFTPChild.
const SFTPHelperCommand = "agent-sftp"

// Defaults for Config fields left zero.
const (
	DefaultKeepaliveInterval = 15 * time.Second
	DefaultKeepaliveMax      = 3
	DefaultHandshakeTimeout  = 30 * time.Second
	DefaultMaxConnections    = 512
	DefaultMaxChannels       = 64

	DefaultMaxHandshakesPerAddr      = 16
	DefaultMaxHandshakes             = 128
	DefaultMaxConnectionsPerInstance = 32
	DefaultMaxChannelsPerInstance    = 128
)

// callTimeout bounds one call to the runtime made while setting a session
// up (an instance lookup, a dial, an exec start).
const callTimeout = 30 * time.Second

// Config configures a Server.
type Config struct {
	// HostKey identifies the server; see LoadOrCreateHostKey. Required.
	HostKey ssh.Signer
	// TrustedKeys are the only client keys accepted: the control plane's
	// gateway key(s). SetTrustedKeys replaces them while serving.
	TrustedKeys []ssh.PublicKey
	// Runtime runs the instances reached. Required.
	Runtime runtime.Access
	// Logger receives refusals and failures (nil: discarded).
	Logger *slog.Logger
	// SFTPHelper is the command line of the sftp helper: a static Linux
	// executable on this host, which the server copies into an instance
	// (under SFTPHelperDir, through runtime.Installer) and runs there
	// through the runtime's exec with the arguments that follow. Default:
	// this executable with SFTPHelperCommand (a CGO_ENABLED=0 build).
	SFTPHelper []string
	// KeepaliveInterval is how often the server asks the client whether it
	// is alive (keepalive@openssh.com); a connection that leaves
	// KeepaliveMax of them unanswered is closed. Default 15 s and 3;
	// a negative interval turns keepalives off.
	KeepaliveInterval time.Duration
	KeepaliveMax      int
	// IdleTimeout closes a connection on which no channel carried data
	// for that long. Zero: no idle timeout (keepalives still close dead
	// connections).
	IdleTimeout time.Duration
	// HandshakeTimeout bounds the SSH handshake and authentication
	// (default 30 s).
	HandshakeTimeout time.Duration
	// MaxConnections bounds concurrent connections (default 512);
	// MaxChannels the channels open at once on one (default 64).
	MaxConnections int
	MaxChannels    int
	// MaxHandshakesPerAddr bounds the connections from one remote address
	// that have not authenticated yet (default 16), MaxHandshakes all of
	// them (default 128): what cannot authenticate (a container that can
	// reach the server, say) never holds the slots the gateway needs.
	MaxHandshakesPerAddr int
	MaxHandshakes        int
	// MaxConnectionsPerInstance bounds the authenticated connections to
	// one instance (or of one move; default 32), MaxChannelsPerInstance
	// the channels open on all of them (default 128): one instance's users
	// cannot starve the others'.
	MaxConnectionsPerInstance int
	MaxChannelsPerInstance    int
	// Audit, when set, receives every session's start and end and every
	// refusal. It is called synchronously: it must not block for long.
	Audit func(Event)
	// Transfers, when set, receives moving instances' copies from other
	// agents: password logins are then offered, decided by it, and may
	// open only TransferChannelType channels. Nil: no password logins.
	Transfers Transfers
}

// Server is the agent's SSH access server.
type Server struct {
	cfg    Config
	log    *slog.Logger
	sshCfg *ssh.ServerConfig
	conns  chan struct{} // a slot per connection
	limits *limits

	mu      sync.RWMutex
	trusted [][]byte // wire form of the trusted keys

	helperOnce sync.Once
	sftpHelper *sftpHelper
	helperErr  error
}

// New checks cfg and returns a server.
func New(cfg Config) (*Server, error) {
	if cfg.HostKey == nil {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "access server: a host key is required")
	}
	if cfg.Runtime == nil {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "access server: a runtime is required")
	}
	if cfg.KeepaliveInterval == 0 {
		cfg.KeepaliveInterval = DefaultKeepaliveInterval
	}
	if cfg.KeepaliveMax <= 0 {
		cfg.KeepaliveMax = DefaultKeepaliveMax
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxChannels <= 0 {
		cfg.MaxChannels = DefaultMaxChannels
	}
	if cfg.MaxHandshakesPerAddr <= 0 {
		cfg.MaxHandshakesPerAddr = DefaultMaxHandshakesPerAddr
	}
	if cfg.MaxHandshakes <= 0 {
		cfg.MaxHandshakes = min(DefaultMaxHandshakes, cfg.MaxConnections)
	}
	if cfg.MaxConnectionsPerInstance <= 0 {
		cfg.MaxConnectionsPerInstance = DefaultMaxConnectionsPerInstance
	}
	if cfg.MaxChannelsPerInstance <= 0 {
		cfg.MaxChannelsPerInstance = DefaultMaxChannelsPerInstance
	}
	if cfg.IdleTimeout < 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "access server: idle timeout must not be negative")
	}
	if len(cfg.SFTPHelper) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, gpurent.WrapError(gpurent.CodeInternal, err, "access server: find this executable for the sftp helper")
		}
		cfg.SFTPHelper = []string{exe, SFTPHelperCommand}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:    cfg,
		log:    log.With("component", "access"),
		conns:  make(chan struct{}, cfg.MaxConnections),
		limits: newLimits(cfg),
	}
	s.SetTrustedKeys(cfg.TrustedKeys)
	s.sshCfg = &ssh.ServerConfig{
		ServerVersion:             "SSH-2.0-gpurent_agent",
		PublicKeyCallback:         s.checkKey,
		VerifiedPublicKeyCallback: s.checkInstance,
		AuthLogCallback:           s.logAuth,
	}
	if cfg.Transfers != nil {
		s.sshCfg.PasswordCallback = s.checkPassword
	}
	s.sshCfg.AddHostKey(cfg.HostKey)
	return s, nil
}

// SetTrustedKeys replaces the client keys accepted from now on.
// Established connections are not affected.
func (s *Server) SetTrustedKeys(keys []ssh.PublicKey) {
	wire := make([][]byte, 0, len(keys))
	for _, k := range keys {
		if k != nil {
			wire = append(wire, k.Marshal())
		}
	}
	s.mu.Lock()
	s.trusted = wire
	s.mu.Unlock()
}

func (s *Server) isTrusted(key ssh.PublicKey) bool {
	b := key.Marshal()
	s.mu.RLock()
	defer s.mu.RUnlock()
	ok := false
	for _, t := range s.trusted {
		if len(t) == len(b) && subtle.ConstantTimeCompare(t, b) == 1 {
			ok = true
		}
	}
	return ok
}

// extKey carries the key's fingerprint from authentication to the
// connection.
const extKey = "gpurent-key-fingerprint"

func (s *Server) checkKey(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	if !s.isTrusted(key) {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "key not trusted")
	}
	return &ssh.Permissions{Extensions: map[string]string{extKey: ssh.FingerprintSHA256(key)}}, nil
}

// checkInstance runs once the client proved it holds a trusted key: the
// user must be an instance running under this runtime.
func (s *Server) checkInstance(meta ssh.ConnMetadata, key ssh.PublicKey, perms *ssh.Permissions, _ string) (*ssh.Permissions, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if _, err := s.cfg.Runtime.PID(ctx, meta.User()); err != nil {
		s.log.Warn("ssh login refused", "instance", meta.User(), "remote", meta.RemoteAddr().String(), "reason", err)
		now := time.Now().UTC()
		s.audit(Event{
			Instance: meta.User(), Kind: KindLogin, RemoteAddr: meta.RemoteAddr().String(),
			KeyFingerprint: ssh.FingerprintSHA256(key), Start: now, End: now, ExitCode: -1, Err: err.Error(),
		})
		return nil, err
	}
	return perms, nil
}

func (s *Server) logAuth(meta ssh.ConnMetadata, method string, err error) {
	// Only checkKey answers unauthorized; checkInstance logs its own.
	if method == "publickey" && gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		s.log.Warn("ssh key refused: not a trusted key", "instance", meta.User(), "remote", meta.RemoteAddr().String())
	}
}

func (s *Server) audit(e Event) {
	if s.cfg.Audit != nil {
		s.cfg.Audit(e)
	}
}

// Serve accepts connections on ln until ctx ends, then closes ln and every
// connection and returns nil once their sessions are over. Other accept
// errors end it with the error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	backoff := 5 * time.Millisecond
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				s.log.Warn("ssh accept failed; retrying", "err", err)
				time.Sleep(backoff)
				backoff = min(2*backoff, time.Second)
				continue
			}
			return gpurent.WrapError(gpurent.CodeUnavailable, err, "access server: accept")
		}
		backoff = 5 * time.Millisecond
		select {
		case s.conns <- struct{}{}:
		default:
			s.log.Warn("ssh connection refused: too many connections", "remote", nc.RemoteAddr().String(), "max", s.cfg.MaxConnections)
			_ = nc.Close()
			continue
		}
		addr := addrOf(nc)
		if !s.limits.startHandshake(addr) {
			<-s.conns
			s.log.Warn("ssh connection refused: too many unauthenticated connections", "remote", nc.RemoteAddr().String(),
				"max_per_address", s.cfg.MaxHandshakesPerAddr, "max", s.cfg.MaxHandshakes)
			_ = nc.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-s.conns }()
			s.serveConn(ctx, nc, addr)
		}()
	}
}

// conn is one authenticated connection.
type conn struct {
	srv      *Server
	sc       *ssh.ServerConn
	ctx      context.Context
	instance string // the login's user: an instance id, or an operation id with grant
	remote   string
	key      string
	grant    string // set for a transfer (password) login
	log      *slog.Logger
	chans    chan struct{} // a slot per open channel

	born     time.Time
	activity atomic.Int64 // nanoseconds since born of the last channel data
}

func (c *conn) touch() { c.activity.Store(int64(time.Since(c.born))) }

// serveConn serves a connection from addr, which holds one of addr's
// handshake slots until it has authenticated.
func (s *Server) serveConn(ctx context.Context, nc net.Conn, addr string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	defer stop()
	_ = nc.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	hc, handshakeDone := quickack.Wrap(nc)
	sc, chans, reqs, err := ssh.NewServerConn(hc, s.sshCfg)
	handshakeDone()
	s.limits.endHandshake(addr)
	if err != nil {
		s.log.Debug("ssh handshake failed", "remote", nc.RemoteAddr().String(), "err", err)
		_ = nc.Close()
		return
	}
	_ = nc.SetDeadline(time.Time{})
	defer sc.Close()
	user := sc.User()
	if !s.limits.take(s.limits.conns, s.cfg.MaxConnectionsPerInstance, user) {
		s.log.Warn("ssh connection refused: too many connections to this instance", "instance", user,
			"remote", nc.RemoteAddr().String(), "max", s.cfg.MaxConnectionsPerInstance)
		return
	}
	defer s.limits.give(s.limits.conns, user)
	c := &conn{
		srv: s, sc: sc, ctx: ctx,
		instance: sc.User(),
		remote:   nc.RemoteAddr().String(),
		key:      sc.Permissions.Extensions[extKey],
		grant:    sc.Permissions.Extensions[extGrant],
		chans:    make(chan struct{}, s.cfg.MaxChannels),
		born:     time.Now(),
	}
	if c.grant != "" {
		c.log = s.log.With("operation", c.instance, "remote", c.remote)
	} else {
		c.log = s.log.With("instance", c.instance, "remote", c.remote)
	}
	c.log.Debug("ssh connection open", "key", c.key)
	go c.keepalive(cancel)
	go c.idleWatch(cancel)
	go c.globalRequests(reqs)

	var wg sync.WaitGroup
	for nch := range chans {
		select {
		case c.chans <- struct{}{}:
		default:
			c.log.Warn("ssh channel refused: too many channels", "type", nch.ChannelType(), "max", s.cfg.MaxChannels)
			_ = nch.Reject(ssh.ResourceShortage, "too many channels on this connection")
			continue
		}
		if !s.limits.take(s.limits.chans, s.cfg.MaxChannelsPerInstance, user) {
			<-c.chans
			c.log.Warn("ssh channel refused: too many channels to this instance", "type", nch.ChannelType(), "max", s.cfg.MaxChannelsPerInstance)
			_ = nch.Reject(ssh.ResourceShortage, "too many channels to this instance")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-c.chans }()
			defer s.limits.give(s.limits.chans, user)
			if c.grant != "" {
				c.handleTransferLogin(nch)
				return
			}
			switch nch.ChannelType() {
			case "session":
				c.handleSession(nch)
			case "direct-tcpip":
				c.handleForward(nch)
			default:
				c.log.Warn("ssh channel refused: unsupported type", "type", nch.ChannelType())
				_ = nch.Reject(ssh.UnknownChannelType, "channel type not supported")
			}
		}()
	}
	// The connection is gone: end what runs on it, and wait for the
	// sessions to report their end.
	cancel()
	wg.Wait()
	c.log.Debug("ssh connection closed")
}

// globalRequests refuses every connection-level request: remote
// forwarding ("tcpip-forward") is not offered, and a client's keepalive
// gets the failure reply OpenSSH expects.
func (c *conn) globalRequests(reqs <-chan *ssh.Request) {
	for req := range reqs {
		if req.Type == "tcpip-forward" || req.Type == "streamlocal-forward@openssh.com" {
			c.log.Warn("ssh remote forwarding refused: not supported", "type", req.Type)
		}
		if req.WantReply {
			_ = req.Reply(false, nil)
		}
	}
}

// keepalive closes the connection when the client stops answering.
func (c *conn) keepalive(closeConn context.CancelFunc) {
	interval := c.srv.cfg.KeepaliveInterval
	if interval < 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		replied := make(chan error, 1)
		go func() {
			_, _, err := c.sc.SendRequest("keepalive@openssh.com", true, nil)
			replied <- err
		}()
		wait := time.NewTimer(interval * time.Duration(c.srv.cfg.KeepaliveMax))
		select {
		case err := <-replied:
			wait.Stop()
			if err != nil {
				closeConn()
				return
			}
		case <-wait.C:
			c.log.Warn("ssh connection closed: keepalives unanswered", "count", c.srv.cfg.KeepaliveMax)
			closeConn()
			return
		case <-c.ctx.Done():
			wait.Stop()
			return
		}
	}
}

// idleWatch closes the connection when no channel carried data for the
// idle timeout.
func (c *conn) idleWatch(closeConn context.CancelFunc) {
	idle := c.srv.cfg.IdleTimeout
	if idle <= 0 {
		return
	}
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		since := time.Since(c.born) - time.Duration(c.activity.Load())
		if since >= idle {
			c.log.Info("ssh connection closed: idle", "idle", since.Round(time.Second).String())
			closeConn()
			return
		}
		t.Reset(idle - since)
	}
}

// event starts an audit event of this connection.
func (c *conn) event(kind Kind, command string) Event {
	return Event{
		Instance: c.instance, Kind: kind, Command: command,
		RemoteAddr: c.remote, KeyFingerprint: c.key,
		Start: time.Now().UTC(), ExitCode: -1,
	}
}

// refused reports a refused session to the log and the audit hook.
func (c *conn) refused(kind Kind, command string, reason string) {
	c.log.Warn("ssh session refused", "kind", string(kind), "command", command, "reason", reason)
	e := c.event(kind, command)
	e.End, e.Err = e.Start, reason
	c.srv.audit(e)
}

// meteredChannel counts a channel's bytes and marks the connection active.
type meteredChannel struct {
	ssh.Channel
	c       *conn
	in, out atomic.Int64
}

func (m *meteredChannel) Read(p []byte) (int, error) {
	n, err := m.Channel.Read(p)
	if n > 0 {
		m.in.Add(int64(n))
		m.c.touch()
	}
	return n, err
}

func (m *meteredChannel) Write(p []byte) (int, error) {
	n, err := m.Channel.Write(p)
	if n > 0 {
		m.out.Add(int64(n))
		m.c.touch()
	}
	return n, err
}

// stderr is the channel's extended data stream, metered.
func (m *meteredChannel) stderr() *meteredWriter {
	return &meteredWriter{w: m.Channel.Stderr(), m: m}
}

type meteredWriter struct {
	w interface{ Write([]byte) (int, error) }
	m *meteredChannel
}

func (w *meteredWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if n > 0 {
		w.m.out.Add(int64(n))
		w.m.c.touch()
	}
	return n, err
}

// logLines logs what a helper writes to its stderr, a line at a time, at
// most maxLogLines lines.
type logLines struct {
	log   *slog.Logger
	buf   []byte
	lines int
}

const maxLogLines = 100

func (l *logLines) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 4096 {
		l.emit(l.buf)
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

func (l *logLines) emit(line []byte) {
	if l.lines < maxLogLines && len(bytes.TrimSpace(line)) > 0 {
		l.log.Warn("helper: " + string(line))
	}
	l.lines++
}
