package sshgate

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
	"golang.org/x/crypto/ssh"
)

// upstreamPool shares one SSH connection per (agent, instance) among the
// customer connections and proxied requests that use it. A connection is
// dialled by its first user, shared while anyone holds a lease, and closed
// UpstreamLinger after the last lease ends or at once when it breaks.
type upstreamPool struct {
	cfg *Config
	log *slog.Logger

	mu      sync.Mutex
	closed  bool
	entries map[upstreamKey]*upstream
	running sync.WaitGroup // one per connection, from dial to its end
}

type upstreamKey struct {
	addr, instance, hostKey string
}

type upstream struct {
	key    upstreamKey
	ready  chan struct{} // closed when the dial finished; then client or err is set
	client *ssh.Client
	err    error
	done   chan struct{} // closed when the connection is gone

	// guarded by the pool's mu
	refs   int
	linger *time.Timer
}

// lease is one user's hold on an upstream connection.
type lease struct {
	pool *upstreamPool
	u    *upstream
	once sync.Once
}

func (l *lease) client() *ssh.Client   { return l.u.client }
func (l *lease) done() <-chan struct{} { return l.u.done }
func (l *lease) release()              { l.once.Do(func() { l.pool.release(l.u) }) }

func newUpstreamPool(cfg *Config) *upstreamPool {
	return &upstreamPool{cfg: cfg, log: cfg.Logger, entries: map[upstreamKey]*upstream{}}
}

// acquire returns a lease on the connection to t, dialling it if needed.
func (p *upstreamPool) acquire(ctx context.Context, t Target) (*lease, error) {
	if t.HostKey == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnavailable, "the host key of the agent of instance %s is unknown", t.InstanceID)
	}
	key := upstreamKey{addr: t.Addr, instance: t.InstanceID, hostKey: string(t.HostKey.Marshal())}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, gpurent.Errorf(gpurent.CodeUnavailable, "the ssh gateway is shutting down")
	}
	u := p.entries[key]
	if u == nil {
		u = &upstream{key: key, ready: make(chan struct{}), done: make(chan struct{})}
		p.entries[key] = u
		p.running.Add(1)
		go func() {
			defer p.running.Done()
			p.dial(u, t)
		}()
	}
	u.refs++
	if u.linger != nil {
		u.linger.Stop()
		u.linger = nil
	}
	p.mu.Unlock()

	l := &lease{pool: p, u: u}
	select {
	case <-u.ready:
	case <-ctx.Done():
		l.release()
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, ctx.Err(), "connecting to the host of instance %s took too long", t.InstanceID)
	}
	if u.err != nil {
		l.release()
		return nil, u.err
	}
	select {
	case <-u.done:
		// It broke between the dial and now; the next acquire dials anew.
		l.release()
		return nil, gpurent.Errorf(gpurent.CodeUnavailable, "the connection to the host of instance %s was lost", t.InstanceID)
	default:
	}
	return l, nil
}

func (p *upstreamPool) dial(u *upstream, t Target) {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.DialTimeout)
	defer cancel()
	client, err := dialAgent(ctx, p.cfg, t)
	if err != nil {
		p.log.Warn("ssh gateway: agent unreachable", "instance", t.InstanceID, "addr", t.Addr, "err", err)
		u.err = gpurent.WrapError(gpurent.CodeUnavailable, err, "the host of instance %s is unreachable", t.InstanceID)
		p.mu.Lock()
		if p.entries[u.key] == u {
			delete(p.entries, u.key)
		}
		p.mu.Unlock()
		close(u.done)
		close(u.ready)
		return
	}
	// client is set under mu so that close either sees it or is seen.
	p.mu.Lock()
	u.client = client
	closed := p.closed
	p.mu.Unlock()
	close(u.ready)
	if closed {
		client.Close()
	}
	kaDone := make(chan struct{})
	if p.cfg.KeepaliveInterval > 0 {
		go func() {
			defer close(kaDone)
			keepalive(u.done, client, p.cfg.KeepaliveInterval, p.cfg.KeepaliveCountMax, func() {
				p.log.Warn("ssh gateway: agent stopped answering keepalives", "instance", t.InstanceID, "addr", t.Addr)
			})
		}()
	} else {
		close(kaDone)
	}
	defer func() { <-kaDone }()
	werr := client.Wait()
	p.log.Debug("ssh gateway: agent connection closed", "instance", t.InstanceID, "addr", t.Addr, "err", werr)
	p.mu.Lock()
	if p.entries[u.key] == u {
		delete(p.entries, u.key)
	}
	if u.linger != nil {
		u.linger.Stop()
		u.linger = nil
	}
	p.mu.Unlock()
	close(u.done)
}

func (p *upstreamPool) release(u *upstream) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u.refs--
	if u.refs > 0 || u.client == nil {
		return
	}
	select {
	case <-u.done:
		return
	default:
	}
	if p.closed || p.cfg.UpstreamLinger < 0 {
		if p.entries[u.key] == u {
			delete(p.entries, u.key)
		}
		go u.client.Close()
		return
	}
	u.linger = time.AfterFunc(p.cfg.UpstreamLinger, func() {
		p.mu.Lock()
		idle := u.refs == 0
		if idle && p.entries[u.key] == u {
			delete(p.entries, u.key)
		}
		p.mu.Unlock()
		if idle {
			u.client.Close()
		}
	})
}

// close ends every pooled connection, refuses new leases, and waits until
// the connections' goroutines are done (a dial in flight ends within
// DialTimeout).
func (p *upstreamPool) close() {
	defer p.running.Wait()
	p.mu.Lock()
	p.closed = true
	var clients []*ssh.Client
	for k, u := range p.entries {
		if u.linger != nil {
			u.linger.Stop()
			u.linger = nil
		}
		if u.client != nil {
			clients = append(clients, u.client)
		}
		delete(p.entries, k)
	}
	p.mu.Unlock()
	for _, c := range clients {
		c.Close()
	}
}

// dialAgent connects and logs in to an agent's access server as the instance,
// verifying the agent's host key.
func dialAgent(ctx context.Context, cfg *Config, t Target) (*ssh.Client, error) {
	d := net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(cfg.DialTimeout)
	}
	_ = nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	conf := &ssh.ClientConfig{
		User:            t.InstanceID,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(cfg.ClientKey)},
		HostKeyCallback: ssh.FixedHostKey(t.HostKey),
		ClientVersion:   "SSH-2.0-gpurent-gateway",
		Timeout:         cfg.DialTimeout,
	}
	c, chans, reqs, err := ssh.NewClientConn(nc, t.Addr, conf)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if !stop() {
		c.Close()
		return nil, ctx.Err()
	}
	_ = nc.SetDeadline(time.Time{})
	// NewClient refuses channels the agent opens toward us and answers its
	// global requests (keepalives) with a failure, which is a reply.
	return ssh.NewClient(c, chans, reqs), nil
}

// requester is an SSH connection that global requests can be sent on.
type requester interface {
	SendRequest(name string, wantReply bool, payload []byte) (bool, []byte, error)
	Close() error
}

// keepalive sends keepalive@openssh.com every interval until stop is closed,
// and closes c (after calling onDead) when countMax requests in a row went
// unanswered or sending failed.
func keepalive(stop <-chan struct{}, c requester, interval time.Duration, countMax int, onDead func()) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	replies := make(chan error, 1)
	inflight := false
	missed := 0
	for {
		select {
		case <-stop:
			return
		case err := <-replies:
			inflight = false
			if err != nil {
				c.Close()
				return
			}
			missed = 0
		case <-ticker.C:
			if inflight {
				missed++
				if missed >= countMax {
					onDead()
					c.Close()
					return
				}
				continue
			}
			inflight = true
			go func() {
				_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
				replies <- err
			}()
		}
	}
}
