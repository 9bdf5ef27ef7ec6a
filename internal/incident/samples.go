package incident

import (
	"context"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
)

// samplesKept is how many telemetry samples are kept per GPU for charts.
const samplesKept = 360

// SamplePoint is one telemetry sample of a GPU, as charts show it.
type SamplePoint struct {
	At          time.Time // UTC
	UtilPercent int
	MemUsedMiB  int64
}

// GPUSeries is one GPU's recent telemetry: its index on the host, its
// memory (0 when the agent did not say) and its samples, oldest first.
type GPUSeries struct {
	Index     int
	MemoryMiB int64
	Points    []SamplePoint
}

// point is a sample as the ring keeps it: small, so a large fleet's
// history stays small (16 bytes a sample).
type point struct {
	unix int64 // seconds
	mem  int32 // MiB
	util uint8
}

// ring is one GPU's last samplesKept samples.
type ring struct {
	buf       []point // grows to samplesKept, then wraps
	next      int     // where the next sample goes once full
	index     int
	memoryMiB int64
}

func (r *ring) add(p point) {
	if n := len(r.buf); n > 0 {
		last := r.buf[n-1]
		if n == samplesKept {
			last = r.buf[(r.next+samplesKept-1)%samplesKept]
		}
		if p.unix <= last.unix {
			return // a report repeats the latest sample until a new one is taken
		}
	}
	if len(r.buf) < samplesKept {
		r.buf = append(r.buf, p)
		return
	}
	r.buf[r.next] = p
	r.next = (r.next + 1) % samplesKept
}

// since copies the samples taken at or after from, oldest first.
func (r *ring) since(from int64) []SamplePoint {
	out := make([]SamplePoint, 0, len(r.buf))
	n := len(r.buf)
	for i := 0; i < n; i++ {
		p := r.buf[(r.next+i)%n] // next is 0 until the ring is full
		if p.unix < from {
			continue
		}
		out = append(out, SamplePoint{At: time.Unix(p.unix, 0).UTC(), UtilPercent: int(p.util), MemUsedMiB: int64(p.mem)})
	}
	return out
}

// sampleHistory is every GPU's ring, by UUID. Its zero value is ready.
type sampleHistory struct {
	mu    sync.Mutex
	rings map[string]*ring
}

// record appends one GPU's sample; index and memory describe the GPU
// (memory 0: unknown, the last known kept).
func (h *sampleHistory) record(uuid string, index int, memoryMiB int64, at time.Time, util int, memUsedMiB int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rings == nil {
		h.rings = map[string]*ring{}
	}
	r := h.rings[uuid]
	if r == nil {
		r = &ring{}
		h.rings[uuid] = r
	}
	r.index = index
	if memoryMiB > 0 {
		r.memoryMiB = memoryMiB
	}
	r.add(point{unix: at.Unix(), util: uint8(min(max(util, 0), 100)), mem: int32(min(max(memUsedMiB, 0), 1<<31-1))})
}

// series copies the samples of the GPUs taken at or after from.
func (h *sampleHistory) series(uuids []string, from time.Time) map[string]GPUSeries {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]GPUSeries, len(uuids))
	for _, id := range uuids {
		r := h.rings[id]
		if r == nil {
			out[id] = GPUSeries{Points: []SamplePoint{}}
			continue
		}
		out[id] = GPUSeries{Index: r.index, MemoryMiB: r.memoryMiB, Points: r.since(from.Unix())}
	}
	return out
}

// InstanceSamples is the recent telemetry of the instance's GPUs, by GPU
// UUID: the samples taken since its current allocation began (never a
// previous tenant's), at most the last 360 per GPU. An instance that holds
// no GPUs now answers an empty map. Another account's instance is not
// found; operators see any.
func (s *Service) InstanceSamples(ctx context.Context, acc *gpurent.Account, instanceID string) (map[string]GPUSeries, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	in, err := s.store.InstanceByID(ctx, instanceID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) || (err == nil && in.AccountID != acc.ID && acc.Role != gpurent.RoleOperator) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "instance %q not found", instanceID)
	} else if err != nil {
		return nil, err
	}
	if in.AllocationID == "" || len(in.GPUIDs) == 0 {
		return map[string]GPUSeries{}, nil
	}
	a, err := s.store.AllocationByID(ctx, in.AllocationID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return map[string]GPUSeries{}, nil // ended meanwhile
	} else if err != nil {
		return nil, err
	}
	return s.history.series(a.GPUIDs, a.StartedAt), nil
}
