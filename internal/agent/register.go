package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// credentials are what registration gives an agent. They are bound to the
// control plane URL and host name they were issued for: a token is never
// sent to another server, and a renamed host registers anew.
type credentials struct {
	ServerURL  string `json:"server_url"`
	Name       string `json:"name"`
	HostID     string `json:"host_id"`
	AgentToken string `json:"agent_token"`
}

func credentialsPath(stateDir string) string {
	return filepath.Join(stateDir, "agent-credentials.json")
}

// loadCredentials reads the stored credentials; ok is false when there are
// none usable for this server and name.
func (a *Agent) loadCredentials() (credentials, bool) {
	b, err := os.ReadFile(a.credsAt)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			a.log.Warn("agent: cannot read stored credentials; registering", "err", err)
		}
		return credentials{}, false
	}
	if fi, err := os.Stat(a.credsAt); err == nil && fi.Mode().Perm()&0o077 != 0 {
		a.log.Warn("agent: credentials file readable by others; restricting it to 0600", "path", a.credsAt)
		if err := os.Chmod(a.credsAt, 0o600); err != nil {
			a.log.Warn("agent: cannot restrict credentials file", "err", err)
		}
	}
	var c credentials
	if err := json.Unmarshal(b, &c); err != nil || c.HostID == "" || c.AgentToken == "" {
		a.log.Warn("agent: stored credentials unreadable; registering", "err", err)
		return credentials{}, false
	}
	if c.ServerURL != a.baseURL || c.Name != a.cfg.Name {
		a.log.Info("agent: stored credentials are for another server or name; registering",
			"stored_server", c.ServerURL, "stored_name", c.Name)
		return credentials{}, false
	}
	return c, true
}

// saveCredentials writes c with mode 0600 (writeDurably's temporary file
// is made so), atomically.
func (a *Agent) saveCredentials(c credentials) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeDurably(a.credsAt, append(b, '\n'))
}

func (a *Agent) token() string {
	a.credMu.Lock()
	defer a.credMu.Unlock()
	return a.creds.AgentToken
}

func (a *Agent) hostID() string {
	a.credMu.Lock()
	defer a.credMu.Unlock()
	return a.creds.HostID
}

// connect loads stored credentials or registers.
func (a *Agent) connect(ctx context.Context) error {
	a.credMu.Lock()
	defer a.credMu.Unlock()
	if c, ok := a.loadCredentials(); ok {
		a.creds = c
		a.log.Info("agent: using stored credentials", "host_id", c.HostID)
		return nil
	}
	return a.registerLocked(ctx)
}

// reauth registers again after the control plane rejected stale, unless
// another loop already did.
func (a *Agent) reauth(ctx context.Context, stale string) error {
	a.credMu.Lock()
	defer a.credMu.Unlock()
	if a.creds.AgentToken != stale {
		return nil
	}
	a.log.Warn("agent: control plane rejected the agent token; registering again")
	return a.registerLocked(ctx)
}

// registerLocked registers until it succeeds, ctx ends, or the control
// plane refuses outright. The caller holds credMu.
func (a *Agent) registerLocked(ctx context.Context) error {
	join := a.cfg.JoinToken
	if a.cfg.JoinTokenFunc != nil {
		var err error
		if join, err = a.cfg.JoinTokenFunc(ctx); err != nil {
			return fmt.Errorf("agent: registration needs a join token: %w", err)
		}
	}
	if join == "" {
		return gpurent.Errorf(gpurent.CodeUnauthorized,
			"agent: registration needed but no join token configured (an operator creates one with `gpurent hosts join-token create`)")
	}
	bo := newBackoff(a.cfg.RetryMin, a.cfg.RetryMax)
	for {
		err := a.registerOnce(ctx, join)
		if err == nil {
			bo.reset()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if permanent(err) {
			return fmt.Errorf("agent: registration refused: %w", err)
		}
		d := bo.next()
		a.log.Warn("agent: registration failed; retrying", "err", err, "retry_in", d)
		if !a.sleep(ctx, d) {
			return ctx.Err()
		}
	}
}

// registerOnce registers with the join token join, presenting the
// agent's current token too when it has one for this server and name (a
// host re-registers with its own credential; a stale one is ignored).
func (a *Agent) registerOnce(ctx context.Context, join string) error {
	gpus, err := a.inventory(ctx)
	if err != nil {
		return err
	}
	current := ""
	if a.creds.ServerURL == a.baseURL && a.creds.Name == a.cfg.Name {
		current = a.creds.AgentToken
	}
	req := agentproto.RegisterRequest{
		JoinToken:    join,
		AgentToken:   current,
		Name:         a.cfg.Name,
		Zone:         a.cfg.Zone,
		CPUMilli:     a.cfg.CPUMilli,
		MemoryMiB:    a.cfg.MemoryMiB,
		DiskGiB:      a.cfg.DiskGiB,
		Runtime:      a.cfg.Runtime.Name(),
		AgentVersion: a.cfg.Version,
		GPUs:         gpus,
	}
	var resp agentproto.RegisterResponse
	if _, err := a.call(ctx, "POST", agentproto.PathRegister, "", requestTimeout, req, &resp); err != nil {
		return err
	}
	if resp.HostID == "" || resp.AgentToken == "" {
		return gpurent.Errorf(gpurent.CodeUnavailable, "control plane answered registration without host id or token")
	}
	c := credentials{ServerURL: a.baseURL, Name: a.cfg.Name, HostID: resp.HostID, AgentToken: resp.AgentToken}
	if err := a.saveCredentials(c); err != nil {
		// Running on with credentials in memory only would register again
		// after every restart; say so loudly but keep the host serving.
		a.log.Error("agent: cannot store credentials; the next restart registers again", "err", err)
	}
	a.creds = c
	a.log.Info("agent: registered", "host_id", c.HostID, "gpus", len(gpus))
	return nil
}

// inventory lists the GPUs for the control plane. When the provider fails
// the last good inventory is returned, so one failed read does not make
// every GPU look missing; registration without any read fails.
func (a *Agent) inventory(ctx context.Context) ([]agentproto.GPUInfo, error) {
	devs, err := a.cfg.GPUs.Devices(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		if a.lastGPUs != nil {
			a.log.Error("agent: GPU provider failed; reporting the last inventory", "provider", a.cfg.GPUs.Name(), "err", err)
			return a.lastGPUs, nil
		}
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "GPU provider %s failed", a.cfg.GPUs.Name())
	}
	out := make([]agentproto.GPUInfo, 0, len(devs))
	for _, d := range devs {
		out = append(out, agentproto.GPUInfo{
			UUID:      d.UUID,
			Index:     d.Index,
			Type:      d.TypeID,
			Name:      d.Name,
			MemoryMiB: d.MemoryMiB,
			TopoGroup: d.TopoGroup,
			NUMANode:  d.NUMANode,
			Health:    string(gpurent.GPUHealthy),
		})
	}
	a.lastGPUs = out
	return out, nil
}
