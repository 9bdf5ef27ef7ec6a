package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/catalog"
)

// SeedAccount creates a customer account with email.
func SeedAccount(t testing.TB, q gpurent.Queries, email string) *gpurent.Account {
	t.Helper()
	a := &gpurent.Account{Email: email, Name: email, Role: gpurent.RoleCustomer, PasswordHash: "x"}
	if err := q.CreateAccount(context.Background(), a); err != nil {
		t.Fatalf("create account %s: %v", email, err)
	}
	return a
}

// SeedHost registers a ready host called name in zone "z1" with n GPUs of
// type typeID (ids GPU-<name>-<index>) and returns it with its GPUs.
func SeedHost(t testing.TB, q gpurent.Queries, name, typeID string, n int) *gpurent.Host {
	t.Helper()
	ctx := context.Background()
	h := &gpurent.Host{Name: name, ZoneID: "z1", State: gpurent.HostReady, CPUMilli: 64000,
		MemoryMiB: 512 * 1024, DiskGiB: 4096, Runtime: "docker", AgentVersion: "test",
		AgentTokenHash: "hash-" + name}
	if err := q.UpsertHost(ctx, h); err != nil {
		t.Fatalf("upsert host %s: %v", name, err)
	}
	gpus := make([]gpurent.GPU, n)
	for i := range gpus {
		gpus[i] = gpurent.GPU{ID: fmt.Sprintf("GPU-%s-%d", name, i), Index: i, TypeID: typeID,
			MemoryMiB: 81920, Health: gpurent.GPUHealthy, TopoGroup: fmt.Sprintf("nvl%d", i/4), NUMANode: i / 4}
	}
	if err := q.SyncHostGPUs(ctx, h.ID, gpus); err != nil {
		t.Fatalf("sync GPUs of %s: %v", name, err)
	}
	for i := range gpus {
		gpus[i].HostID = h.ID
	}
	h.GPUs = gpus
	return h
}

// SeedInstance creates a pending instance of the account.
func SeedInstance(t testing.TB, q gpurent.Queries, accountID, name string) *gpurent.Instance {
	t.Helper()
	in := &gpurent.Instance{AccountID: accountID, Name: name, Image: "busybox", TypeID: "h100-80g-sxm",
		GPUCount: 1, State: gpurent.StatePending, Plan: gpurent.PlanHourly}
	if err := q.CreateInstance(context.Background(), in); err != nil {
		t.Fatalf("create instance %s: %v", name, err)
	}
	return in
}

// SeedFleet registers hosts hosts with gpusPerHost GPUs each, in batches of
// transactions.
func SeedFleet(t testing.TB, s gpurent.Store, hosts, gpusPerHost int) []*gpurent.Host {
	t.Helper()
	out := make([]*gpurent.Host, 0, hosts)
	const batch = 100
	for i := 0; i < hosts; i += batch {
		err := s.InTx(context.Background(), func(q gpurent.Queries) error {
			for j := i; j < min(i+batch, hosts); j++ {
				out = append(out, SeedHost(t, q, fmt.Sprintf("node-%05d", j), "h100-80g-sxm", gpusPerHost))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("seed fleet: %v", err)
		}
	}
	return out
}

// SeedCatalog writes the default GPU types and zones, as `gpurent serve`
// does on its first start.
func SeedCatalog(t testing.TB, st gpurent.Store) {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err = st.InTx(ctx, func(q gpurent.Queries) error {
		for _, gt := range c.GPUTypes {
			if err := q.UpsertGPUType(ctx, gt); err != nil {
				return err
			}
		}
		for _, z := range c.Zones {
			if err := q.UpsertZone(ctx, z); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seed catalog: %v", err)
	}
}
