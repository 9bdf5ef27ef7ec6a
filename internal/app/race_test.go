package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
	"github.com/gpurent/gpurent/internal/gpu/fake"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// registerHosts registers hosts of 8 fake GPUs straight through the fleet
// service, as their agents would (each with a join token minted for it), and
// returns their agent tokens; no agent runs, so nothing starts.
func registerHosts(t testing.TB, s *Server, prefix, typ string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var tokens []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%04d", prefix, i)
		join, err := s.MintJoinToken(ctx, []string{"cd-tianfu-a", "cd-gaoxin-b"}[i%2], name)
		if err != nil {
			t.Fatal(err)
		}
		req := agentproto.RegisterRequest{JoinToken: join, Name: name, Zone: []string{"cd-tianfu-a", "cd-gaoxin-b"}[i%2],
			CPUMilli: 256_000, MemoryMiB: 4 << 20, DiskGiB: 7680, Runtime: "docker", AgentVersion: "test"}
		for _, d := range fake.Devices(fake.Config{Host: name, TypeID: typ, Count: 8, MemoryMiB: 81920, GroupSize: 8}) {
			req.GPUs = append(req.GPUs, agentproto.GPUInfo{UUID: d.UUID, Index: d.Index, Type: d.TypeID, Name: d.Name,
				MemoryMiB: d.MemoryMiB, TopoGroup: d.TopoGroup, NUMANode: d.NUMANode})
		}
		reg, err := s.Fleet.Register(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, reg.AgentToken)
	}
	return tokens
}

// customers signs up n customers and returns their API clients.
func customers(t testing.TB, s *Server, n int) []*client.Client {
	t.Helper()
	ctx := context.Background()
	op, err := s.Auth.CreateAccount(ctx, fmt.Sprintf("ops-%d@race.example", time.Now().UnixNano()), "ops", "ops-password-1",
		gpurent.RoleOperator, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*client.Client, n)
	for i := range out {
		email := fmt.Sprintf("c%03d-%d@race.example", i, time.Now().UnixNano())
		anon := client.New(s.URL, "", nil)
		if _, err := anon.Register(ctx, apiv1.RegisterRequest{Email: email, Name: "racer", Password: "race-password"}); err != nil {
			t.Fatal(err)
		}
		login, err := anon.Login(ctx, apiv1.LoginRequest{Email: email, Password: "race-password"})
		if err != nil {
			t.Fatal(err)
		}
		// Enough for the start gate (an hour of what they rent) many times.
		if _, _, err := s.Wallet.Credit(ctx, op, email, 100_000_000, "race test", "seed"); err != nil {
			t.Fatal(err)
		}
		out[i] = client.New(s.URL, login.Token, nil)
	}
	return out
}

// TestLastGPUsRace: 200 concurrent rent requests race through the API for
// the last free GPUs. No GPU is allocated twice, exactly as many requests
// succeed as GPUs were free, every loser gets a clear "sold out" answer, and
// losers leave no records behind.
func TestLastGPUsRace(t *testing.T) {
	for _, backend := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(backend.name, func(t *testing.T) {
			ctx := context.Background()
			st := backend.open(t)
			s, err := StartServer(ctx, ServerConfig{Store: st, Listen: "127.0.0.1:0", JoinToken: "join-race",
				BcryptCost: 4, HostTimeout: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			registerHosts(t, s, "race", "h100-80g-sxm", 3)
			cs := customers(t, s, 20)

			// Fill the fleet but for 7 GPUs spread over the hosts.
			for _, n := range []int{8, 5, 4} {
				if _, err := cs[0].CreateInstance(ctx, apiv1.CreateInstanceRequest{GPUType: "h100-80g-sxm", GPUCount: n, Image: "busybox"}, ""); err != nil {
					t.Fatal(err)
				}
			}
			const free, requests = 7, 200
			var (
				wg        sync.WaitGroup
				mu        sync.Mutex
				won       []apiv1.Instance
				soldOut   int
				unhandled []error
			)
			start := make(chan struct{})
			for i := 0; i < requests; i++ {
				wg.Add(1)
				go func(c *client.Client) {
					defer wg.Done()
					<-start
					in, err := c.CreateInstance(ctx, apiv1.CreateInstanceRequest{GPUType: "h100-80g-sxm", GPUCount: 1, Image: "busybox"}, "")
					mu.Lock()
					defer mu.Unlock()
					var apiErr *client.APIError
					switch {
					case err == nil:
						won = append(won, in)
					case errors.As(err, &apiErr) && apiErr.Status == 503 && apiErr.Code() == gpurent.CodeUnavailable &&
						strings.Contains(apiErr.Problem.Detail, "sold out"):
						soldOut++
					default:
						unhandled = append(unhandled, err)
					}
				}(cs[i%len(cs)])
			}
			close(start)
			wg.Wait()
			for _, err := range unhandled {
				t.Errorf("a loser got an unclear answer: %v", err)
			}
			if len(won) != free || soldOut != requests-free {
				t.Fatalf("%d won and %d were sold out; want %d and %d", len(won), soldOut, free, requests-free)
			}
			// The database's view: every GPU held once, by a live allocation.
			hosts, err := st.ListHosts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			holders := map[string]string{}
			for _, h := range hosts {
				for _, g := range h.GPUs {
					if g.AllocationID == "" {
						t.Errorf("GPU %s is free after the race", g.ID)
					}
					holders[g.ID] = g.InstanceID
				}
			}
			seen := map[string]bool{}
			for _, in := range won {
				if len(in.GPUs) != 1 {
					t.Fatalf("instance %s holds %v", in.ID, in.GPUs)
				}
				g := in.GPUs[0]
				if seen[g] || holders[g] != in.ID {
					t.Errorf("GPU %s: handed to %s, held by %s, seen twice: %v", g, in.ID, holders[g], seen[g])
				}
				seen[g] = true
			}
			all, err := st.ListInstances(ctx, gpurent.InstanceFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 3+free {
				t.Errorf("%d instances in the database, want %d: losers must leave nothing", len(all), 3+free)
			}
		})
	}
}
