package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
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

func (d directory) AccountForKey(ctx context.Context, key ssh.PublicKey) (string, error) {
	return d.keys.AccountForKey(ctx, key)
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

// startGateway listens on cfg.SSHListen and serves the gateway; the answer
// tells the API where it is.
func startGateway(cfg ServerConfig, st gpurent.Store, keys *sshkeys.Service) (*gateway, *api.Access, error) {
	host, client, secret, err := gatewayKeys(cfg.KeyDir)
	if err != nil {
		return nil, nil, err
	}
	gw, err := sshgate.New(sshgate.Config{HostKey: host, ClientKey: client, Directory: directory{store: st, keys: keys},
		Audit: auditSink(st, cfg.Logger), IdleTimeout: cfg.SSHIdleTimeout, Logger: cfg.Logger, Now: cfg.Now})
	if err != nil {
		return nil, nil, err
	}
	proxy, err := sshgate.NewPortProxy(gw, sshgate.ProxyConfig{Secret: secret, SecureCookies: cfg.SecureCookies})
	if err != nil {
		gw.Close()
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", cfg.SSHListen)
	if err != nil {
		proxy.Close()
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
	return g, &api.Access{SSHAddr: addr, HostKey: host.PublicKey(), GatewayKey: client.PublicKey(), Link: proxy.Link, Proxy: proxy}, nil
}

// close stops the gateway, ending its connections.
func (g *gateway) close() {
	g.cancel()
	<-g.done
	g.proxy.Close()
	g.gw.Close()
}
