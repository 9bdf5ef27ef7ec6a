package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// TestJoinTokensThroughTheCLI: an operator creates (shown once), lists and
// revokes join tokens and resets a host with the real CLI against a real
// control plane; a customer can do none of it; a used or revoked token
// registers nothing, and a fresh one cannot take over a registered host.
func TestJoinTokensThroughTheCLI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := StartServer(ctx, ServerConfig{DSN: filepath.Join(dir, "gpurent.db"), Listen: "127.0.0.1:0", BcryptCost: 4,
		HostTimeout: time.Hour, SSHListen: ""})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := seedDemoAccounts(ctx, s); err != nil {
		t.Fatal(err)
	}
	op := newUser(t, s.URL)
	if out, errOut, err := op.run(DemoOperatorPassword+"\n", "login", "--email", DemoOperatorEmail, "--password-stdin"); err != nil {
		t.Fatalf("operator login: %v\n%s%s", err, out, errOut)
	}

	var named apiv1.CreatedJoinToken
	if err := json.Unmarshal([]byte(op.must("hosts", "join-token", "create", "--zone", "cd-tianfu-a", "--name", "n1", "--ttl", "1h", "-o", "json")), &named); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(named.Token, "gpj_") || named.Name != "n1" || named.State != "active" {
		t.Fatalf("created %+v", named)
	}
	human := op.must("hosts", "join-token", "create", "--zone", "cd-tianfu-a")
	if !strings.Contains(human, "gpj_") || !strings.Contains(human, "--join-token-file /etc/gpurent/join-token") ||
		!strings.Contains(human, "--server "+s.URL) {
		t.Fatalf("create printed:\n%s", human)
	}

	reg := func(join, name string) (agentproto.RegisterResponse, error) {
		return s.Fleet.Register(ctx, agentproto.RegisterRequest{JoinToken: join, Name: name, Zone: "cd-tianfu-a",
			CPUMilli: 64000, MemoryMiB: 1 << 20, DiskGiB: 100, Runtime: "docker", AgentVersion: "test",
			GPUs: []agentproto.GPUInfo{{UUID: "GPU-n1-0", Type: "h100-80g-sxm", Name: "H100", MemoryMiB: 81920}}})
	}
	first, err := reg(named.Token, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg(named.Token, "n2"); !gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		t.Fatalf("a used token again: %v", err)
	}
	var list apiv1.JoinTokenList
	if err := json.Unmarshal([]byte(op.must("hosts", "join-token", "ls", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	var other string
	for _, jt := range list.JoinTokens {
		switch {
		case jt.ID == named.ID && (jt.State != "used" || jt.UsedName != "n1"):
			t.Fatalf("the used token is listed as %+v", jt)
		case jt.ID != named.ID:
			other = jt.ID
		}
	}
	if len(list.JoinTokens) != 2 || other == "" || strings.Contains(op.must("hosts", "join-token", "ls"), "gpj_") {
		t.Fatalf("list %+v", list)
	}
	if out := op.must("hosts", "join-token", "revoke", other); !strings.Contains(out, "revoked") {
		t.Fatalf("revoke printed %q", out)
	}
	if !strings.Contains(op.must("hosts", "join-token", "ls"), "revoked") {
		t.Fatal("the revoked token is not listed as revoked")
	}
	if _, _, err := op.run("", "hosts", "join-token", "revoke", named.ID); err == nil {
		t.Fatal("revoking a used token succeeded")
	}

	// A fresh token cannot take n1 over.
	var fresh apiv1.CreatedJoinToken
	if err := json.Unmarshal([]byte(op.must("hosts", "join-token", "create", "--zone", "cd-tianfu-a", "-o", "json")), &fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := reg(fresh.Token, "n1"); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Fatalf("a fresh token naming n1: %v, want conflict", err)
	}
	if h, err := s.Fleet.AuthenticateAgent(ctx, first.AgentToken); err != nil || h.ID != first.HostID {
		t.Fatalf("n1's agent after the refused takeover: %v", err)
	}

	// A customer can do none of it.
	cust := newUser(t, s.URL)
	cust.signUp("cust@example.com", "customer-pass")
	for _, args := range [][]string{
		{"hosts", "join-token", "create", "--zone", "cd-tianfu-a"},
		{"hosts", "join-token", "ls"},
		{"hosts", "join-token", "revoke", fresh.ID},
		{"hosts", "reset", first.HostID},
	} {
		if _, _, err := cust.run("", args...); err == nil {
			t.Fatalf("a customer ran gpurent %s", strings.Join(args, " "))
		}
	}

	// Reset: the old agent token is refused; the printed token re-registers n1.
	var reset apiv1.HostReset
	if err := json.Unmarshal([]byte(op.must("hosts", "reset", first.HostID, "-o", "json")), &reset); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fleet.AuthenticateAgent(ctx, first.AgentToken); !gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		t.Fatalf("n1's old agent token after the reset: %v", err)
	}
	again, err := reg(reset.JoinToken.Token, "n1")
	if err != nil || again.HostID != first.HostID {
		t.Fatalf("re-register after reset: %+v, %v", again, err)
	}
}

// TestAgentJoinTokenNeverOnTheCommandLine: `agent --join-token VALUE` and
// `serve --join-token` are refused with where the token goes instead; the
// token file is read when the agent registers.
func TestAgentJoinTokenNeverOnTheCommandLine(t *testing.T) {
	for _, c := range []struct {
		cmd  func() error
		want error
	}{
		{func() error {
			cmd := agentCommand()
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SetArgs([]string{"--join-token", "gpj_secret", "--zone", "cd-tianfu-a"})
			return cmd.ExecuteContext(context.Background())
		}, errJoinTokenFlag},
		{func() error {
			cmd := serveCommand()
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SetArgs([]string{"--join-token", "gpj_secret", "--data-dir", t.TempDir()})
			return cmd.ExecuteContext(context.Background())
		}, errSharedJoinToken},
	} {
		if err := c.cmd(); !errors.Is(err, c.want) {
			t.Fatalf("got %v, want %v", err, c.want)
		}
	}
	if !strings.Contains(errJoinTokenFlag.Error(), "--join-token-file") || !strings.Contains(errJoinTokenFlag.Error(), "GPURENT_JOIN_TOKEN") {
		t.Fatalf("the refusal does not say where the token goes: %v", errJoinTokenFlag)
	}

	file := filepath.Join(t.TempDir(), "join-token")
	static, read := joinTokenSource(file, "from-env")
	if static != "" || read == nil {
		t.Fatal("a token file must be read at registration, not at start-up")
	}
	if _, err := read(context.Background()); err == nil {
		t.Fatal("a missing token file read fine")
	}
	if err := os.WriteFile(file, []byte("gpj_from_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := read(context.Background()); err != nil || tok != "gpj_from_file" {
		t.Fatalf("token file read %q, %v", tok, err)
	}
	if static, read := joinTokenSource("", "gpj_env"); static != "gpj_env" || read != nil {
		t.Fatalf("environment token: %q", static)
	}
}
