package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/catalog"
)

// dockerFleet is a control plane on SQLite with fast billing passes, one
// host of real Docker containers, a signed-up customer and an operator.
type dockerFleet struct {
	s     *Server
	u     *user
	acc   *gpurent.Account
	ops   *gpurent.Account
	image string
}

// startDockerFleet starts it; name keeps its join token, containers and
// accounts apart from other tests'. The host has gpus GPUs of typeID.
func startDockerFleet(t testing.TB, name, typeID string, gpus int) *dockerFleet {
	t.Helper()
	image := dockertest.BusyboxImage(t)
	ctx := context.Background()
	dir := t.TempDir()
	join := "join-" + name
	s, err := StartServer(ctx, ServerConfig{DSN: filepath.Join(dir, "gpurent.db"), Listen: "127.0.0.1:0", JoinToken: join,
		BcryptCost: 4, PollWait: 5 * time.Second, BillingInterval: 200 * time.Millisecond,
		SSHListen: "127.0.0.1:0", KeyDir: filepath.Join(dir, "keys")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	scope := name + "-" + strings.ToLower(dockertest.NewInstanceID()[2:8])
	as, err := StartAgents(ctx, AgentsConfig{InitBinary: dockertest.InitBinary(t), ServerURL: s.URL, Join: s, DataDir: filepath.Join(dir, "agents"),
		Hosts:   []DemoHost{{Name: scope, Zone: "cd-tianfu-a", TypeID: typeID, GPUs: gpus, GroupSize: min(gpus, 4)}},
		Catalog: c, Runtime: RuntimeDocker, HeartbeatInterval: 300 * time.Millisecond, RetryMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Stop)
	u := newUser(t, s.URL)
	email := name + "@lab.example"
	u.signUp(email, name+"-password-1")
	ops, err := s.Auth.CreateAccount(ctx, "ops@"+name+".example", "Ops", "ops-password-12", gpurent.RoleOperator, 0)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := s.Store.AccountByEmail(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the host's GPUs listed", func() bool { return freeGPUs(t, u, typeID) == gpus })
	return &dockerFleet{s: s, u: u, acc: acc, ops: ops, image: image}
}

// credit tops the customer up by fen as an operator credit under key.
func (f *dockerFleet) credit(t testing.TB, fen int64, key string) {
	t.Helper()
	if _, _, err := f.s.Wallet.Credit(context.Background(), f.ops, f.acc.ID, fen, "test credit", key); err != nil {
		t.Fatal(err)
	}
}
