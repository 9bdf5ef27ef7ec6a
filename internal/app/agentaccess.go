package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent/internal/access"
	"github.com/gpurent/gpurent/internal/agent"
	agentruntime "github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/delta"
	"github.com/gpurent/gpurent/internal/transfer"
)

// startAccess runs the agent's SSH access server on listen when the
// runtime can reach into its instances (Docker can; the demo's process
// runtime cannot: then nil, and the host offers no SSH). advertise is the
// address the gateway dials ("": the listener's, with this machine's
// name for an unspecified host). The server trusts the keys the control
// plane sends in report answers.
//
// The same server receives instances moving here from other hosts (the
// returned Transfers, nil when there is no server): their source agents
// log in with the move's token and push over it.
func startAccess(ctx context.Context, stateDir, listen, advertise string, rt agentruntime.Runtime, initBin string, log *slog.Logger) (*agent.AccessEndpoint, agent.Transfers, error) {
	ra, ok := rt.(agentruntime.Access)
	if !ok || listen == "" {
		if listen != "" {
			log.Warn("the " + rt.Name() + " runtime cannot reach into instances: no SSH access on this host")
		}
		return nil, nil, nil
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, nil, err
	}
	key, err := access.LoadOrCreateHostKey(filepath.Join(stateDir, "access_host_ed25519"))
	if err != nil {
		return nil, nil, fmt.Errorf("access server host key: %w", err)
	}
	recv := transfer.NewReceiver(log)
	cfg := access.Config{HostKey: key, Runtime: ra, Logger: log, Transfers: recv}
	switch p := os.Getenv(EnvSFTPHelper); {
	case p != "":
		cfg.SFTPHelper = []string{p, access.SFTPHelperCommand}
	case initBin != "":
		// The static gpurent the instances' init is serves sftp too.
		cfg.SFTPHelper = []string{initBin, access.SFTPHelperCommand}
	}
	srv, err := access.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	if listen == AccessListenAdvertised {
		if listen, advertise, err = accessListenAddr(advertise); err != nil {
			return nil, nil, err
		}
		if host, _, _ := net.SplitHostPort(listen); net.ParseIP(host).IsLoopback() {
			log.Warn("the access server listens on loopback only: a gateway on another machine cannot reach it; "+
				"set --access-advertise to the address it dials (or --access-listen)", "listen", listen, "advertise", advertise)
		}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, nil, fmt.Errorf("access server: listen on %s: %w", listen, err)
	}
	go func() {
		if err := srv.Serve(ctx, ln); err != nil && ctx.Err() == nil {
			log.Error("access server stopped", "err", err)
		}
	}()
	if advertise == "" {
		advertise = ln.Addr().String()
		if host, port, err := net.SplitHostPort(advertise); err == nil && net.ParseIP(host).IsUnspecified() {
			name, herr := os.Hostname()
			if herr != nil {
				ln.Close()
				return nil, nil, fmt.Errorf("access server: name this host for the gateway with --access-advertise: %w", herr)
			}
			advertise = net.JoinHostPort(name, port)
		}
	}
	return &agent.AccessEndpoint{
		Addr:    advertise,
		HostKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key.PublicKey()))),
		SetGatewayKeys: func(lines []string) {
			var keys []ssh.PublicKey
			for _, l := range lines {
				k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(l))
				if err != nil {
					log.Warn("the control plane sent an unreadable gateway key", "err", err)
					continue
				}
				keys = append(keys, k)
			}
			srv.SetTrustedKeys(keys)
		},
	}, moves{recv: recv, log: log}, nil
}

// AccessListenAdvertised, the default of --access-listen, listens only on
// the address the gateway dials (see accessListenAddr), never on every
// interface: a container on a bridge cannot then reach the access server
// at the host's other addresses.
const AccessListenAdvertised = "advertised"

// DefaultAccessPort is the access server's port when --access-advertise
// does not name one.
const DefaultAccessPort = "2223"

// accessListenAddr is where the access server listens by default, and the
// address to advertise: --access-advertise's host (an IP, or a name
// resolved to an address of this machine) and port; without it, the
// address of this machine's name (the first that is not loopback, else
// loopback), port 2223, advertised by name as before.
func accessListenAddr(advertise string) (listen, advertised string, err error) {
	host, port := "", DefaultAccessPort
	if advertise != "" {
		if host, port, err = net.SplitHostPort(advertise); err != nil {
			return "", "", fmt.Errorf("--access-advertise %q: want host:port: %w", advertise, err)
		}
	} else {
		if host, err = os.Hostname(); err != nil {
			return "", "", fmt.Errorf("access server: name this host for the gateway with --access-advertise: %w", err)
		}
		advertise = net.JoinHostPort(host, port)
	}
	ip, err := localAddrOf(host)
	if err != nil {
		return "", "", fmt.Errorf("access server: %w; set --access-listen to the address the gateway reaches", err)
	}
	return net.JoinHostPort(ip.String(), port), advertise, nil
}

// localAddrOf resolves host to an address of one of this machine's
// interfaces, preferring one that is not loopback.
func localAddrOf(host string) (net.IP, error) {
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		found, err := net.LookupIP(host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		ips = found
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	local := func(ip net.IP) bool {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
		return false
	}
	var loopback net.IP
	for _, ip := range ips {
		switch {
		case ip.IsUnspecified():
			return nil, fmt.Errorf("%s is every address, not one", host)
		case ip.IsLoopback():
			if loopback == nil {
				loopback = ip
			}
		case local(ip):
			return ip, nil
		}
	}
	if loopback != nil {
		return loopback, nil
	}
	return nil, fmt.Errorf("%s is no address of this machine", host)
}

// moves is an agent's side of instance moves: the receiver its access
// server serves, and pushes through internal/transfer.
type moves struct {
	recv *transfer.Receiver
	log  *slog.Logger
}

func (m moves) Expect(op, tokenHash string, trees agentruntime.Trees) {
	m.recv.Expect(op, tokenHash, trees)
}
func (m moves) Forget(op string) { m.recv.Forget(op) }

// Push sends one pass and answers the bytes that crossed the network
// (both ways, SSH framing included).
func (m moves) Push(ctx context.Context, mv agentproto.Move, trees agentruntime.Trees, final bool, progress func(int64)) (int64, error) {
	st, err := transfer.Push(ctx, transfer.PushRequest{Addr: mv.TargetAddr, HostKey: mv.TargetHostKey,
		OperationID: mv.OperationID, Token: mv.Token, Trees: trees, Final: final, Logger: m.log, Progress: progress})
	return st.WireBytes, err
}

// NotReady reports whether a push failed because the target refused its
// login: the target has not prepared for the operation yet.
func (moves) NotReady(err error) bool { return transfer.LoginRefused(err) }

// EnvSFTPHelper names a static gpurent executable (a CGO_ENABLED=0 build)
// for the access server to copy into instances as their sftp helper, when
// the agent's own binary is not static. Default: the instances' init
// binary (--init-binary, GPURENT_INIT), else the agent's binary.
const EnvSFTPHelper = "GPURENT_SFTP_HELPER"

// sftpHelperCommand is the hidden `gpurent agent-sftp`: the sftp server the
// access server copies into an instance and starts there through the
// runtime's exec, inside the instance's isolation.
func sftpHelperCommand() *cobra.Command {
	return &cobra.Command{
		Use:                access.SFTPHelperCommand,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			return access.ServeSFTPChild(args)
		},
	}
}

// carryLayer copies an instance's writable layer to the container of its
// new allocation on the same host (a start on new GPUs after a stop, an
// upgrade), so installed packages and files anywhere survive.
func carryLayer(ctx context.Context, src, dst string, final bool) error {
	_, err := delta.CopyPass(ctx, src, dst, final)
	return err
}
