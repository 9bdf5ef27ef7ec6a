package fake

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu"
)

var nvmlUUID = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestDevicesFollowConfig(t *testing.T) {
	p := New(Config{Host: "cd-a-01", TypeID: "h100-80g-sxm", Name: "NVIDIA H100 80GB HBM3",
		Count: 8, MemoryMiB: 81559, GroupSize: 4, NUMANodes: 2})
	if p.Name() != "fake" {
		t.Fatalf("Name() = %q", p.Name())
	}
	devs, err := p.Devices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 8 {
		t.Fatalf("got %d devices, want 8", len(devs))
	}
	seen := map[string]bool{}
	for i, d := range devs {
		if !nvmlUUID.MatchString(d.UUID) {
			t.Errorf("device %d UUID %q is not NVML-shaped", i, d.UUID)
		}
		if seen[d.UUID] {
			t.Errorf("device %d UUID %q repeats", i, d.UUID)
		}
		seen[d.UUID] = true
		if d.Index != i || d.TypeID != "h100-80g-sxm" || d.Name != "NVIDIA H100 80GB HBM3" || d.MemoryMiB != 81559 {
			t.Errorf("device %d = %+v", i, d)
		}
		wantGroup := "group0"
		wantNUMA := 0
		if i >= 4 {
			wantGroup, wantNUMA = "group1", 1
		}
		if d.TopoGroup != wantGroup || d.NUMANode != wantNUMA {
			t.Errorf("device %d topo %q numa %d, want %q %d", i, d.TopoGroup, d.NUMANode, wantGroup, wantNUMA)
		}
		if d.PCIBusID == "" {
			t.Errorf("device %d has no PCI bus id", i)
		}
	}
}

func TestUUIDsAreDeterministicPerHost(t *testing.T) {
	a1 := Devices(Config{Host: "a", Count: 2})
	a2 := Devices(Config{Host: "a", Count: 2, TypeID: "other"})
	b := Devices(Config{Host: "b", Count: 2})
	for i := range 2 {
		if a1[i].UUID != a2[i].UUID {
			t.Errorf("index %d: same host gave %q and %q", i, a1[i].UUID, a2[i].UUID)
		}
		if a1[i].UUID != UUID("a", i) {
			t.Errorf("index %d: Devices and UUID disagree", i)
		}
		if a1[i].UUID == b[i].UUID {
			t.Errorf("index %d: hosts a and b share UUID %q", i, b[i].UUID)
		}
	}
}

func TestDefaults(t *testing.T) {
	devs := Devices(Config{Host: "h", Count: 3})
	for _, d := range devs {
		if d.TopoGroup != "group0" || d.NUMANode != 0 || d.Name == "" {
			t.Errorf("defaults: %+v", d)
		}
	}
	if got := Devices(Config{Host: "h", Count: -1}); len(got) != 0 {
		t.Errorf("negative count gave %d devices", len(got))
	}
}

func TestScriptedFaults(t *testing.T) {
	ctx := context.Background()
	p := New(Config{Host: "h", Count: 4})
	devs, _ := p.Devices(ctx)

	// The caller's slice is a copy: changing it changes nothing.
	devs[0].UUID = "changed"
	again, _ := p.Devices(ctx)
	if again[0].UUID == "changed" {
		t.Fatal("Devices returned the provider's own slice")
	}

	// A GPU falls off the bus.
	p.SetDevices(again[1:])
	now, _ := p.Devices(ctx)
	if len(now) != 3 || now[0].UUID != again[1].UUID {
		t.Fatalf("after SetDevices: %+v", now)
	}

	// The driver stops answering.
	boom := gpurent.Errorf(gpurent.CodeUnavailable, "NVML: GPU is lost")
	p.SetError(boom)
	if _, err := p.Devices(ctx); !errors.Is(err, boom) {
		t.Fatalf("Devices error = %v, want the scripted one", err)
	}
	p.SetError(nil)
	if _, err := p.Devices(ctx); err != nil {
		t.Fatal(err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Devices(cancelled); err == nil {
		t.Fatal("Devices with a cancelled context succeeded")
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Devices(ctx); !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Fatalf("Devices after Close = %v, want unavailable", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	p := New(Config{Host: "h", Count: 8})
	base := Devices(Config{Host: "h", Count: 8})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if w%2 == 0 {
					p.SetDevices(base[:1+(i+w)%8])
					continue
				}
				devs, err := p.Devices(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if len(devs) == 0 || len(devs) > 8 {
					t.Errorf("got %d devices", len(devs))
					return
				}
			}
		}()
	}
	wg.Wait()
	var _ gpu.Provider = p
}
