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
func startAccess(ctx context.Context, stateDir, listen, advertise string, rt agentruntime.Runtime, log *slog.Logger) (*agent.AccessEndpoint, agent.Transfers, error) {
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
	srv, err := access.New(access.Config{HostKey: key, Runtime: ra, Logger: log, Transfers: recv})
	if err != nil {
		return nil, nil, err
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

// sftpHelperCommand is the hidden `gpurent agent-sftp`: the process the
// access server starts to serve sftp inside an instance's file system.
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
