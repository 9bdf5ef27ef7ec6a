package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/api"
	"github.com/gpurent/gpurent/internal/sshgate"
	"github.com/gpurent/gpurent/internal/sshkeys"
)

// directory is the gateway's view of the control plane: which account a
// key belongs to, and where an account's running instance is reached.
type directory struct {
	store gpurent.Store
	keys  *sshkeys.Service
}

func (d directory) AccountForKey(ctx context.Context, instanceID string, key ssh.PublicKey) (string, error) {
	return d.keys.AccountForKey(ctx, instanceID, key)
}

// KeyUsed records a key's use once the gateway has seen its signature.
func (d directory) KeyUsed(ctx context.Context, accountID string, key ssh.PublicKey) error {
	return d.keys.KeyUsed(ctx, accountID, key)
}

func (d directory) Target(ctx context.Context, accountID, instanceID string) (sshgate.Target, error) {
	in, err := d.store.InstanceByID(ctx, instanceID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) || (err == nil && in.AccountID != accountID) {
		return sshgate.Target{}, gpurent.Errorf(gpurent.CodeNotFound, "instance %s not found", instanceID)
	}
	if err != nil {
		return sshgate.Target{}, err
	}
	if in.State != gpurent.StateRunning {
		return sshgate.Target{}, gpurent.Errorf(gpurent.CodeConflict, "instance %s is not running: it is %s", in.ID, in.State)
	}
	h, err := d.store.HostByID(ctx, in.HostID)
	if err != nil {
		return sshgate.Target{}, err
	}
	if h.AccessAddr == "" || h.AccessHostKey == "" {
		return sshgate.Target{}, gpurent.Errorf(gpurent.CodeUnavailable, "the agent of instance %s's host runs no access server", in.ID)
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(h.AccessHostKey))
	if err != nil {
		return sshgate.Target{}, gpurent.WrapError(gpurent.CodeUnavailable, err, "host %s reported an unreadable access host key", h.ID)
	}
	return sshgate.Target{Addr: h.AccessAddr, HostKey: key, InstanceID: in.ID, AccountID: accountID}, nil
}

// auditSink writes the gateway's records to the store's access log.
func auditSink(st gpurent.Store, log *slog.Logger) sshgate.AuditFunc {
	return func(ctx context.Context, r sshgate.Record) {
		a := &gpurent.AccessSession{ID: r.ID, AccountID: r.AccountID, InstanceID: r.InstanceID, Kind: string(r.Kind),
			Detail: r.Detail, ClientAddr: r.ClientAddr, StartedAt: r.Start, BytesIn: r.BytesIn, BytesOut: r.BytesOut}
		if r.Refusal != "" {
			a.Kind = "refused"
			a.Detail = strings.TrimSpace(string(r.Kind) + " " + r.Detail + ": " + r.Refusal)
		}
		if r.ExitSignal != "" {
			a.Detail = strings.TrimSpace(a.Detail + " (killed by SIG" + r.ExitSignal + ")")
		}
		if !r.End.IsZero() {
			end := r.End
			a.EndedAt = &end
		}
		if r.ExitStatus >= 0 {
			st := r.ExitStatus
			a.ExitStatus = &st
		}
		// The session is over; its record must not be lost to the
		// connection's context being canceled.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := st.AddAccessSession(wctx, a); err != nil {
			log.Error("ssh gateway: audit record not stored", "session", r.ID, "err", err)
		}
	}
}

// gatewayKeys loads (or makes, once) the gateway's host key, its client key
// toward agents, and the port proxy's secret from dir. Every control-plane
// replica must share them.
func gatewayKeys(dir string) (host, client ssh.Signer, secret []byte, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, nil, err
	}
	if host, err = sshgate.LoadOrCreateHostKey(filepath.Join(dir, "ssh_gateway_host_ed25519")); err != nil {
		return nil, nil, nil, fmt.Errorf("the gateway's host key: %w", err)
	}
	if client, err = sshgate.LoadOrCreateHostKey(filepath.Join(dir, "ssh_gateway_client_ed25519")); err != nil {
		return nil, nil, nil, fmt.Errorf("the gateway's key toward agents: %w", err)
	}
	path := filepath.Join(dir, "port_proxy_secret")
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if secret, err = hex.DecodeString(strings.TrimSpace(string(b))); err != nil || len(secret) < 32 {
			return nil, nil, nil, fmt.Errorf("%s: want 64 hex digits", path)
		}
	case errors.Is(err, os.ErrNotExist):
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, nil, nil, err
		}
		if err := os.WriteFile(path, []byte(hex.EncodeToString(secret)+"\n"), 0o600); err != nil {
			return nil, nil, nil, err
		}
	default:
		return nil, nil, nil, err
	}
	return host, client, secret, nil
}

// gateway is the control plane's SSH gateway and port proxy, running.
type gateway struct {
	gw     *sshgate.Gateway
	proxy  *sshgate.PortProxy
	ln     net.Listener
	cancel context.CancelFunc
	done   chan error
}

// startGateway listens on cfg.SSHListen and serves the gateway, and makes
// the port proxy when there is a ports domain; the answer tells the API
// where they are. listenURL is the control plane's listener.
func startGateway(cfg ServerConfig, st gpurent.Store, keys *sshkeys.Service, listenURL string) (*gateway, *api.Access, error) {
	pc, err := portsConfig(cfg, listenURL)
	if err != nil {
		return nil, nil, err
	}
	host, client, secret, err := gatewayKeys(cfg.KeyDir)
	if err != nil {
		return nil, nil, err
	}
	pc.Secret = secret
	gw, err := sshgate.New(sshgate.Config{HostKey: host, ClientKey: client, Directory: directory{store: st, keys: keys},
		Audit: auditSink(st, cfg.Logger), IdleTimeout: cfg.SSHIdleTimeout, Logger: cfg.Logger, Now: cfg.Now})
	if err != nil {
		return nil, nil, err
	}
	var proxy *sshgate.PortProxy
	if pc.Domain != "" {
		if proxy, err = sshgate.NewPortProxy(gw, pc); err != nil {
			gw.Close()
			return nil, nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.SSHListen)
	if err != nil {
		if proxy != nil {
			proxy.Close()
		}
		gw.Close()
		return nil, nil, fmt.Errorf("ssh gateway: listen on %s: %w", cfg.SSHListen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &gateway{gw: gw, proxy: proxy, ln: ln, cancel: cancel, done: make(chan error, 1)}
	go func() { g.done <- gw.Serve(ctx, ln) }()
	addr := cfg.SSHAdvertise
	if addr == "" {
		addr = ln.Addr().String()
	}
	a := &api.Access{SSHAddr: addr, HostKey: host.PublicKey(), GatewayKey: client.PublicKey()}
	if proxy != nil {
		a.Link, a.Proxy, a.PortHost = proxy.Link, proxy, proxy.Owns
	}
	return g, a, nil
}

// portsConfig is the port proxy's domain and the origin of its links (no
// secret yet): the links take the scheme and port of the console's public
// URL (else of listenURL). The domain defaults to "localhost" for a
// console on a loopback address, and must share no cookies with the
// console's host name.
func portsConfig(cfg ServerConfig, listenURL string) (sshgate.ProxyConfig, error) {
	console := listenURL
	if cfg.PublicURL != "" {
		console = cfg.PublicURL
	}
	u, err := url.Parse(console)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return sshgate.ProxyConfig{}, fmt.Errorf("the public URL %q: want http(s)://host[:port]", console)
	}
	pc := sshgate.ProxyConfig{SecureCookies: cfg.SecureCookies, Domain: strings.ToLower(cfg.PortsDomain),
		LinkScheme: u.Scheme, LinkPort: u.Port()}
	if pc.Domain == "" {
		if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
			return pc, nil // no port links
		}
		pc.Domain = "localhost"
	}
	if err := sshgate.CheckPortsDomain(pc.Domain, u.Host); err != nil {
		return pc, fmt.Errorf("--ports-domain: %w", err)
	}
	return pc, nil
}

// close stops the gateway, ending its connections.
func (g *gateway) close() {
	g.cancel()
	<-g.done
	if g.proxy != nil {
		g.proxy.Close()
	}
	g.gw.Close()
}
