package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// seedMetered makes, in the SQLite file at dsn, a customer with ¥1,000, an
// 8 x RTX 4090 host and a rented instance, and returns the host's agent
// token, the instance, its allocation and the customer's id.
func seedMetered(t *testing.T, dsn string) (token, instanceID, allocationID, accountID string) {
	ctx := context.Background()
	s, err := StartServer(ctx, ServerConfig{DSN: dsn, Listen: "127.0.0.1:0", JoinToken: "join-race", BcryptCost: 4, HostTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	token = registerHosts(t, s, "killed", "rtx4090-24g", 1)[0]
	c := customers(t, s, 1)[0]
	in, err := c.CreateInstance(ctx, apiv1.CreateInstanceRequest{GPUType: "rtx4090-24g", GPUCount: 2, Image: "busybox"}, "")
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := s.Store.OpenAllocation(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	return token, in.ID, alloc.ID, in.AccountID
}

// runEvents are n runs of the allocation, each a start and an end, in the
// past, of lengths from 1 s to 3 h, crossing off-peak boundaries.
func runEvents(instanceID, allocationID string, n int) []agentproto.RunEvent {
	rng := rand.New(rand.NewPCG(7, 9))
	at := time.Date(2026, 11, 2, 20, 0, 0, 0, time.UTC)
	var evs []agentproto.RunEvent
	for i := 0; i < n; i++ {
		start := at
		end := start.Add(time.Duration(1+rng.IntN(3*3600)) * time.Second)
		at = end.Add(time.Duration(rng.IntN(3600)) * time.Second)
		evs = append(evs,
			agentproto.RunEvent{ID: fmt.Sprintf("s%03d", i), Kind: agentproto.RunStarted, InstanceID: instanceID, AllocationID: allocationID, StartedAt: start},
			agentproto.RunEvent{ID: fmt.Sprintf("e%03d", i), Kind: agentproto.RunEnded, InstanceID: instanceID, AllocationID: allocationID, StartedAt: start, EndedAt: &end})
	}
	return evs
}

// TestKillDashNine: the control plane is killed with SIGKILL at random
// moments while an agent delivers run events (ingest → rate → post); it is
// restarted and the agent resends what was not acknowledged. The balance
// ends identical to a run without kills, every run is debited once, and
// the ledger sums to zero.
func TestKillDashNine(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gpurent")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/gpurent/gpurent/cmd/gpurent").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	const runs = 40

	// Without kills, in process: the balance to expect.
	cleanDSN := filepath.Join(dir, "clean.db")
	_, inC, allocC, accC := seedMetered(t, cleanDSN)
	ctx := context.Background()
	var wantCash int64
	{
		s, err := StartServer(ctx, ServerConfig{DSN: cleanDSN, Listen: "127.0.0.1:0", JoinToken: "join-race", HostTimeout: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		hosts, _ := s.Store.ListHosts(ctx)
		if _, err := s.Metering.Ingest(ctx, &hosts[0], runEvents(inC, allocC, runs), nil); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Metering.Bill(ctx, s.Billing); err != nil {
			t.Fatal(err)
		}
		bal, err := s.Store.LedgerBalances(ctx, accC)
		if err != nil {
			t.Fatal(err)
		}
		wantCash = bal.CashFen
		if wantCash >= 100_000_000 {
			t.Fatalf("the clean run charged nothing: %d fen", wantCash)
		}
	}

	// With kills: a real process, SIGKILLed.
	dsn := filepath.Join(dir, "killed.db")
	token, in, alloc, acc := seedMetered(t, dsn)
	events := runEvents(in, alloc, runs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--db", dsn, "--listen", addr, "--data-dir", dir, "--ssh-listen", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "GPURENT_DATA_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 200; i++ {
			if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
				resp.Body.Close()
				return cmd
			}
			time.Sleep(25 * time.Millisecond)
		}
		t.Fatal("the control plane did not come up")
		return nil
	}
	rng := rand.New(rand.NewPCG(3, 5))
	pending := events
	kills := 0
	cmd := start()
	for round := 0; len(pending) > 0; round++ {
		if round > 500 {
			t.Fatalf("%d events never acknowledged", len(pending))
		}
		batch := pending[:min(len(pending), 1+rng.IntN(6))]
		killAt := time.Duration(rng.IntN(4000)) * time.Microsecond
		done := make(chan struct{})
		killed := rng.IntN(3) == 0
		if killed {
			go func() {
				select {
				case <-done:
				case <-time.After(killAt):
				}
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}()
		}
		body, _ := json.Marshal(agentproto.Report{ReportID: gpurent.NewID("rpt"), At: time.Now(), Runtime: "docker", Runs: batch})
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+agentproto.PathReport, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		var acked agentproto.ReportResponse
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			if resp.StatusCode == http.StatusOK {
				_ = json.NewDecoder(resp.Body).Decode(&acked)
			}
			resp.Body.Close()
		}
		close(done)
		ack := map[string]bool{}
		for _, id := range acked.RunsAcked {
			ack[id] = true
		}
		var rest []agentproto.RunEvent
		for _, e := range pending {
			if !ack[e.ID] {
				rest = append(rest, e)
			}
		}
		pending = rest
		if killed {
			_ = cmd.Wait()
			kills++
			cmd = start()
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	t.Logf("%d events delivered through %d kills", len(events), kills)

	// Settle what a kill may have left unbilled, in process, then compare.
	s, err := StartServer(ctx, ServerConfig{DSN: dsn, Listen: "127.0.0.1:0", JoinToken: "join-race", HostTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Metering.Bill(ctx, s.Billing); err != nil {
		t.Fatal(err)
	}
	bal, err := s.Store.LedgerBalances(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	if bal.CashFen != wantCash {
		t.Errorf("cash after kills %d fen, without kills %d fen", bal.CashFen, wantCash)
	}
	got, err := s.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in})
	if err != nil || len(got) != runs {
		t.Fatalf("%d runs (%v), want %d", len(got), err, runs)
	}
	for _, r := range got {
		if !r.Settled {
			t.Errorf("run %s not settled", r.ID)
		}
	}
	platform, err := s.Store.LedgerPlatformBalances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, v := range platform {
		sum += v
	}
	if sum+bal.CashFen+bal.ReceivableFen != 0 {
		t.Errorf("the ledger does not sum to zero: platform %v, customer cash %d", platform, bal.CashFen)
	}
}
