package graph_test

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/graph"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// TestNewBuildsEveryService: graph.New hands out every service, and a
// fleet change reaches both the rental service's placement cache and the
// adapter's callback (FleetChanged), the one edge to the outside it wires.
func TestNewBuildsEveryService(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	storetest.SeedCatalog(t, st)
	var changes atomic.Int64
	s, err := graph.New(graph.Config{Store: st, BcryptCost: 4, FleetChanged: func() { changes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer || f.Kind() == reflect.Interface {
			if f.IsNil() {
				t.Errorf("graph.New left Services.%s nil", v.Type().Field(i).Name)
			}
		}
	}

	op := &gpurent.Account{Email: "ops@example.com", Role: gpurent.RoleOperator, PasswordHash: "x"}
	if err := st.CreateAccount(ctx, op); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	zone, typ := c.Zones[0].ID, c.GPUTypes[0].ID
	secret, _, err := s.Fleet.CreateJoinToken(ctx, op, zone, "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	before := changes.Load()
	gpus := []agentproto.GPUInfo{{UUID: "GPU-00000000-0000-0000-0000-000000000001", Index: 0, Type: typ,
		MemoryMiB: 81920, Health: string(gpurent.GPUHealthy)}}
	if _, err := s.Fleet.Register(ctx, agentproto.RegisterRequest{JoinToken: secret, Name: "gpu-01", Zone: zone,
		CPUMilli: 64_000, MemoryMiB: 256 << 10, DiskGiB: 1024, Runtime: "docker", AgentVersion: "test", GPUs: gpus}); err != nil {
		t.Fatal(err)
	}
	if changes.Load() == before {
		t.Error("a host's registration did not reach Config.FleetChanged through the graph")
	}
}
