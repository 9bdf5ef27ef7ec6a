package sched

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
)

func TestPlace(t *testing.T) {
	tests := []struct {
		name  string
		hosts []Host
		req   Request
		host  string
		gpus  []string
	}{
		{
			name:  "type filter",
			hosts: []Host{box("a", "z1", r4090, 8, 4), box("b", "z1", h100, 8, 8)},
			req:   Request{TypeID: h100, Count: 8},
			host:  "b", gpus: ids("b", 0, 1, 2, 3, 4, 5, 6, 7),
		},
		{
			name:  "single GPU goes to the tightest group",
			hosts: []Host{box("a", "z1", h100, 4, 4).groups("x", "x", "y", "y").used(0)},
			req:   Request{TypeID: h100, Count: 1},
			host:  "a", gpus: ids("a", 1),
		},
		{
			name:  "mixed-type host gives only GPUs of the type",
			hosts: []Host{box("a", "z1", h100, 4, 4).groups("x", "x", "y", "y").retype(r4090, 2)},
			req:   Request{TypeID: r4090, Count: 1},
			host:  "a", gpus: ids("a", 2),
		},
		{
			name: "zone filter beats a better fit elsewhere",
			hosts: []Host{
				box("a", "z1", h100, 8, 8).used(0, 1, 2, 3, 4, 5, 6),
				box("b", "z2", h100, 8, 8),
			},
			req:  Request{TypeID: h100, Count: 1, ZoneID: "z2"},
			host: "b", gpus: ids("b", 0),
		},
		{
			name: "host pin beats a better fit elsewhere",
			hosts: []Host{
				box("a", "z1", h100, 8, 8).used(0, 1, 2, 3, 4, 5, 6),
				box("b", "z1", h100, 8, 8),
			},
			req:  Request{TypeID: h100, Count: 1, HostID: "b"},
			host: "b", gpus: ids("b", 0),
		},
		{
			name: "cordoned host is skipped",
			hosts: []Host{
				box("a", "z1", h100, 8, 8).used(0, 1, 2, 3, 4, 5, 6).cordoned(),
				box("b", "z1", h100, 8, 8),
			},
			req:  Request{TypeID: h100, Count: 1},
			host: "b", gpus: ids("b", 0),
		},
		{
			name: "unhealthy GPUs are not free",
			hosts: []Host{
				box("a", "z1", h100, 2, 2).sick(1),
				box("b", "z1", h100, 4, 4).used(0, 1),
			},
			req:  Request{TypeID: h100, Count: 2},
			host: "b", gpus: ids("b", 2, 3),
		},
		{
			name:  "unhealthy GPU shrinks its group for best fit",
			hosts: []Host{box("a", "z1", r4090, 8, 4).sick(0)},
			req:   Request{TypeID: r4090, Count: 3},
			host:  "a", gpus: ids("a", 1, 2, 3),
		},
		{
			name: "CPU short host is skipped",
			hosts: []Host{
				box("a", "z1", h100, 8, 8).used(0, 1, 2, 3, 4, 5, 6).res(8_000, bigMem),
				box("b", "z1", h100, 8, 8),
			},
			req:  Request{TypeID: h100, Count: 1, CPUMilli: 16_000, MemoryMiB: 1024},
			host: "b", gpus: ids("b", 0),
		},
		{
			name: "memory short host is skipped",
			hosts: []Host{
				box("a", "z1", h100, 8, 8).used(0, 1, 2, 3, 4, 5, 6).res(bigCPU, 1024),
				box("b", "z1", h100, 8, 8),
			},
			req:  Request{TypeID: h100, Count: 1, CPUMilli: 16_000, MemoryMiB: 2048},
			host: "b", gpus: ids("b", 0),
		},
		{
			name: "negative free CPU is short",
			hosts: []Host{
				box("a", "z1", h100, 8, 8).used(0, 1, 2, 3, 4, 5, 6).res(-4000, bigMem),
				box("b", "z1", h100, 8, 8),
			},
			req:  Request{TypeID: h100, Count: 1},
			host: "b", gpus: ids("b", 0),
		},
		{
			name: "best fit keeps a whole host free",
			hosts: []Host{
				box("a", "z1", h100, 8, 8),
				box("b", "z1", h100, 8, 8).used(0, 1, 2, 3, 4, 5),
			},
			req:  Request{TypeID: h100, Count: 2},
			host: "b", gpus: ids("b", 6, 7),
		},
		{
			name: "best fit picks the fewest left over",
			hosts: []Host{
				box("a", "z1", h100, 8, 8),
				box("b", "z1", h100, 8, 8).used(0, 1, 2, 3, 4),
				box("c", "z1", h100, 8, 8).used(0, 1, 2, 3, 4, 5, 6),
				box("d", "z1", h100, 8, 8).used(0, 1, 2, 3, 4, 5),
			},
			req:  Request{TypeID: h100, Count: 1},
			host: "c", gpus: ids("c", 7),
		},
		{
			name: "fewest left over beats one group",
			hosts: []Host{
				box("a", "z1", r4090, 8, 4).used(0, 1, 2, 4, 5), // 3 free, group t0 {3}, t1 {6,7}
				box("b", "z1", r4090, 8, 4).used(0, 1, 2, 4, 5, 6),
			},
			req:  Request{TypeID: r4090, Count: 2},
			host: "b", gpus: ids("b", 3, 7),
		},
		{
			name: "one group beats a split at equal leftover",
			hosts: []Host{
				box("a", "z1", r4090, 8, 4).used(0, 1, 2, 4, 5, 6), // {3} {7}
				box("b", "z1", r4090, 8, 4).used(0, 1, 4, 5, 6, 7), // {2,3}
			},
			req:  Request{TypeID: r4090, Count: 2},
			host: "b", gpus: ids("b", 2, 3),
		},
		{
			name: "least CPU left over at equal GPU fit",
			hosts: []Host{
				box("a", "z1", h100, 8, 8).res(64_000, 4096),
				box("b", "z1", h100, 8, 8).res(16_000, 4096),
				box("c", "z1", h100, 8, 8).res(32_000, 4096),
			},
			req:  Request{TypeID: h100, Count: 8, CPUMilli: 16_000, MemoryMiB: 1024},
			host: "b", gpus: ids("b", 0, 1, 2, 3, 4, 5, 6, 7),
		},
		{
			name: "least memory left over at equal GPU fit",
			hosts: []Host{
				box("a", "z1", h100, 8, 8).res(16_000, 8192),
				box("b", "z1", h100, 8, 8).res(16_000, 2048),
			},
			req:  Request{TypeID: h100, Count: 8, CPUMilli: 8_000, MemoryMiB: 1024},
			host: "b", gpus: ids("b", 0, 1, 2, 3, 4, 5, 6, 7),
		},
		{
			name: "leftover is a share of what is free, not an amount",
			hosts: []Host{
				// In absolute units a leaves less (56,000m + 3,072 MiB against
				// 1,000m + 998,976 MiB); as shares b leaves less
				// (11% + 99.9% against 87.5% + 75%).
				box("a", "z1", h100, 8, 8).res(64_000, 4096),
				box("b", "z1", h100, 8, 8).res(9_000, 1_000_000),
			},
			req:  Request{TypeID: h100, Count: 1, CPUMilli: 8_000, MemoryMiB: 1024},
			host: "b", gpus: ids("b", 0),
		},
		{
			name: "host ID breaks a full tie",
			hosts: []Host{
				box("h2", "z1", h100, 8, 8),
				box("h1", "z1", h100, 8, 8),
				box("h3", "z1", h100, 8, 8),
			},
			req:  Request{TypeID: h100, Count: 4},
			host: "h1", gpus: ids("h1", 0, 1, 2, 3),
		},
		{
			name:  "best-fit group inside the host",
			hosts: []Host{box("a", "z1", r4090, 8, 4).used(0, 4, 5)}, // t0 {1,2,3}, t1 {6,7}
			req:   Request{TypeID: r4090, Count: 2},
			host:  "a", gpus: ids("a", 6, 7),
		},
		{
			name:  "group that fits beats lower indices",
			hosts: []Host{box("a", "z1", r4090, 8, 4).used(0, 4, 5)},
			req:   Request{TypeID: r4090, Count: 3},
			host:  "a", gpus: ids("a", 1, 2, 3),
		},
		{
			name:  "equal groups: lowest index",
			hosts: []Host{box("a", "z1", r4090, 8, 4)},
			req:   Request{TypeID: r4090, Count: 2},
			host:  "a", gpus: ids("a", 0, 1),
		},
		{
			name:  "spanning: largest group whole, then best fit for the rest",
			hosts: []Host{box("a", "z1", r4090, 8, 4).used(0)}, // t0 {1,2,3}, t1 {4..7}
			req:   Request{TypeID: r4090, Count: 6},
			host:  "a", gpus: ids("a", 1, 2, 4, 5, 6, 7),
		},
		{
			name: "spanning: fewest groups, remainder from the tightest group",
			// t0 {0,1,2,3}, t1 {4,5,6}, t2 {8}: 5 = t0 + t2, not t0 + t1.
			hosts: []Host{box("a", "z1", r4090, 12, 4).used(7, 9, 10, 11)},
			req:   Request{TypeID: r4090, Count: 5},
			host:  "a", gpus: ids("a", 0, 1, 2, 3, 8),
		},
		{
			name: "spanning: equal groups largest first by index",
			// t0 {1}, t1 {3}, t2 {4,5}, t3 {6,7}: 5 = t2 + t3 + t0.
			hosts: []Host{box("a", "z1", r4090, 8, 2).used(0, 2)},
			req:   Request{TypeID: r4090, Count: 5},
			host:  "a", gpus: ids("a", 1, 4, 5, 6, 7),
		},
		{
			name:  "NUMA best fit inside the group",
			hosts: []Host{box("a", "z1", h100, 4, 4).numa(0, 0, 1, 1).used(0)},
			req:   Request{TypeID: h100, Count: 2},
			host:  "a", gpus: ids("a", 2, 3),
		},
		{
			name:  "NUMA spanning inside the group takes the larger node whole",
			hosts: []Host{box("a", "z1", h100, 6, 6).numa(0, 1, 1, 1, 0, 1)},
			// node0 {0,4}, node1 {1,2,3,5}: 5 = node1 + 0 from node0
			req:  Request{TypeID: h100, Count: 5},
			host: "a", gpus: ids("a", 0, 1, 2, 3, 5),
		},
		{
			name:  "empty topology group is one group",
			hosts: []Host{box("a", "z1", h100, 4, 1).groups("", "", "", "").numa(0, 0, 0, 0).used(1)},
			req:   Request{TypeID: h100, Count: 2},
			host:  "a", gpus: ids("a", 0, 2),
		},
		{
			name: "GPU IDs come back in index order",
			hosts: []Host{{ID: "a", ZoneID: "z1", Schedulable: true, CPUFree: 1, MemFreeMiB: 1, GPUs: []GPU{
				{ID: "u3", Index: 3, TypeID: h100, TopoGroup: "x", Healthy: true, Free: true},
				{ID: "u1", Index: 1, TypeID: h100, TopoGroup: "x", Healthy: true, Free: true},
				{ID: "u2", Index: 2, TypeID: h100, TopoGroup: "x", Healthy: true, Free: true},
			}}},
			req:  Request{TypeID: h100, Count: 3},
			host: "a", gpus: []string{"u1", "u2", "u3"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := cloneHosts(tc.hosts)
			p, err := Place(tc.req, tc.hosts)
			if err != nil {
				t.Fatalf("Place: %v", err)
			}
			if p.HostID != tc.host || !reflect.DeepEqual(p.GPUIDs, tc.gpus) {
				t.Fatalf("Place = %s %v, want %s %v", p.HostID, p.GPUIDs, tc.host, tc.gpus)
			}
			if !reflect.DeepEqual(before, tc.hosts) {
				t.Fatal("Place changed the snapshot")
			}
			if msg := checkPlacement(tc.req, tc.hosts, p); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

func TestPlaceInvalid(t *testing.T) {
	hosts := []Host{box("a", "z1", h100, 8, 8)}
	for _, req := range []Request{
		{TypeID: h100, Count: -3},
		{TypeID: "", Count: 1},
		{TypeID: h100, Count: 1, CPUMilli: -1},
		{TypeID: h100, Count: 1, MemoryMiB: -1},
	} {
		_, err := Place(req, hosts)
		if !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%+v: err = %v, want ErrInvalidRequest", req, err)
		}
		if errors.Is(err, ErrNoCapacity) {
			t.Errorf("%+v: invalid request matched ErrNoCapacity", req)
		}
		if got := gpurent.ErrorCode(err); got != gpurent.CodeInvalid {
			t.Errorf("%+v: code = %s, want invalid", req, got)
		}
	}
	_, err := Place(Request{TypeID: h100, Count: -3}, hosts)
	if got, want := gpurent.ErrorMessage(err), "GPU count must not be negative, got -3"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}

// A no-GPU request (count 0) needs only CPU and memory, takes no GPU, and
// goes where it leaves the most GPUs of the type to GPU renters.
func TestPlaceNoGPU(t *testing.T) {
	full := box("a", "z1", h100, 8, 8)
	for i := range full.GPUs {
		full.GPUs[i].Free = false
	}
	free := box("b", "z1", h100, 8, 8)
	p, err := Place(Request{TypeID: h100, Count: 0, CPUMilli: 1000, MemoryMiB: 4096}, []Host{free, full})
	if err != nil {
		t.Fatal(err)
	}
	if p.HostID != "a" || len(p.GPUIDs) != 0 {
		t.Errorf("placement = %+v, want host a and no GPUs", p)
	}
	full.CPUFree = 500
	free.CPUFree = 500
	_, err = Place(Request{TypeID: h100, Count: 0, CPUMilli: 1000}, []Host{free, full})
	if !errors.Is(err, ErrNoCapacity) || !strings.Contains(gpurent.ErrorMessage(err), "no-GPU instance") {
		t.Errorf("err = %v, want no capacity for a no-GPU instance", err)
	}
}

func TestPlaceNoCapacity(t *testing.T) {
	z1 := func(hosts ...Host) []Host { return hosts }
	tests := []struct {
		name   string
		hosts  []Host
		req    Request
		reason Reason
		code   gpurent.Code
		msg    string
	}{
		{
			name:   "empty fleet",
			req:    Request{TypeID: h100, Count: 1},
			reason: ReasonUnknownType, code: gpurent.CodeUnavailable,
			msg: "sold out: no h100-80g-sxm GPUs are in service in any zone",
		},
		{
			name:   "type absent from the snapshot",
			hosts:  z1(box("a", "cd-a", r4090, 8, 4)),
			req:    Request{TypeID: h100, Count: 1, ZoneID: "cd-a"},
			reason: ReasonUnknownType, code: gpurent.CodeUnavailable,
			msg: "sold out: no h100-80g-sxm GPUs are in service in any zone",
		},
		{
			name:   "no host of the type in the zone",
			hosts:  z1(box("a", "cd-a", r4090, 8, 4), box("b", "cd-b", h100, 8, 8)),
			req:    Request{TypeID: h100, Count: 1, ZoneID: "cd-a"},
			reason: ReasonNoHost, code: gpurent.CodeUnavailable,
			msg: "sold out: zone cd-a has no h100-80g-sxm GPUs",
		},
		{
			name:   "every host cordoned",
			hosts:  z1(box("a", "cd-a", h100, 8, 8).cordoned(), box("b", "cd-b", h100, 8, 8)),
			req:    Request{TypeID: h100, Count: 1, ZoneID: "cd-a"},
			reason: ReasonNotSchedulable, code: gpurent.CodeUnavailable,
			msg: "sold out: every host with h100-80g-sxm GPUs in zone cd-a is closed to new instances (cordoned, draining or down)",
		},
		{
			name: "not enough on any single host",
			hosts: z1(
				box("a", "cd-a", h100, 8, 8).used(0, 1, 2, 3, 4, 5),
				box("b", "cd-a", h100, 8, 8).used(0, 1, 2, 3, 4, 5, 6),
				box("c", "cd-a", h100, 8, 8).used(0, 1, 2, 3).cordoned(),
				box("d", "cd-b", h100, 8, 8),
			),
			req:    Request{TypeID: h100, Count: 4, ZoneID: "cd-a"},
			reason: ReasonNotEnoughGPUs, code: gpurent.CodeUnavailable,
			msg: "sold out: no host in zone cd-a has 4 free h100-80g-sxm GPUs; most free on one host: 2",
		},
		{
			name:   "free GPUs spread over hosts do not add up",
			hosts:  z1(box("a", "cd-a", h100, 8, 8).used(0, 1, 2, 3), box("b", "cd-a", h100, 8, 8).used(0, 1, 2, 3)),
			req:    Request{TypeID: h100, Count: 8},
			reason: ReasonNotEnoughGPUs, code: gpurent.CodeUnavailable,
			msg: "sold out: no host in any zone has 8 free h100-80g-sxm GPUs; most free on one host: 4",
		},
		{
			name:   "unhealthy GPUs are not free",
			hosts:  z1(box("a", "cd-a", h100, 8, 8).sick(0, 1, 2, 3, 4, 5, 6, 7)),
			req:    Request{TypeID: h100, Count: 1},
			reason: ReasonNotEnoughGPUs, code: gpurent.CodeUnavailable,
			msg: "sold out: no h100-80g-sxm GPU in any zone is free",
		},
		{
			name:   "more than the largest host",
			hosts:  z1(box("a", "cd-a", h100, 8, 8)),
			req:    Request{TypeID: h100, Count: 16, ZoneID: "cd-a"},
			reason: ReasonNotEnoughGPUs, code: gpurent.CodeUnavailable,
			msg: "sold out: no host in zone cd-a has 16 h100-80g-sxm GPUs; an instance's GPUs are on one host and the largest has 8",
		},
		{
			name: "CPU short on every host with the GPUs",
			hosts: z1(
				box("a", "cd-a", h100, 8, 8).res(16_000, bigMem),
				box("b", "cd-a", h100, 8, 8).res(12_500, bigMem),
				box("c", "cd-a", h100, 8, 8).used(0, 1, 2, 3, 4, 5).res(bigCPU, bigMem),
			),
			req:    Request{TypeID: h100, Count: 4, CPUMilli: 32_000, MemoryMiB: 1024},
			reason: ReasonCPU, code: gpurent.CodeUnavailable,
			msg: "sold out: hosts with 4 free h100-80g-sxm GPUs in any zone lack CPU: 32 cores needed, at most 16 cores free",
		},
		{
			name:   "memory short on every host with the GPUs",
			hosts:  z1(box("a", "cd-a", h100, 8, 8).res(bigCPU, 131072)),
			req:    Request{TypeID: h100, Count: 4, CPUMilli: 1500, MemoryMiB: 262144},
			reason: ReasonMemory, code: gpurent.CodeUnavailable,
			msg: "sold out: hosts with 4 free h100-80g-sxm GPUs in any zone lack memory: 256 GiB needed, at most 128 GiB free",
		},
		{
			name: "CPU on one host, memory on another",
			hosts: z1(
				box("a", "cd-a", h100, 8, 8).res(64_000, 1024),
				box("b", "cd-a", h100, 8, 8).res(1_000, 65536),
			),
			req:    Request{TypeID: h100, Count: 1, CPUMilli: 1500, MemoryMiB: 4096},
			reason: ReasonCPUAndMemory, code: gpurent.CodeUnavailable,
			msg: "sold out: no host with 1 free h100-80g-sxm GPU in any zone has CPU and memory free together: 1.5 cores and 4 GiB needed",
		},
		{
			name:   "pinned host missing",
			hosts:  z1(box("a", "cd-a", h100, 8, 8)),
			req:    Request{TypeID: h100, Count: 1, HostID: "gone"},
			reason: ReasonHostNotFound, code: gpurent.CodeUnavailable,
			msg: "host gone is not in service",
		},
		{
			name:   "pinned host outside the zone",
			hosts:  z1(box("a", "cd-a", h100, 8, 8)),
			req:    Request{TypeID: h100, Count: 1, HostID: "a", ZoneID: "cd-b"},
			reason: ReasonHostNotFound, code: gpurent.CodeUnavailable,
			msg: "host a is not in service in zone cd-b",
		},
		{
			name:   "pinned host without the type",
			hosts:  z1(box("a", "cd-a", r4090, 8, 4), box("b", "cd-a", h100, 8, 8)),
			req:    Request{TypeID: h100, Count: 1, HostID: "a"},
			reason: ReasonNoHost, code: gpurent.CodeUnavailable,
			msg: "host a has no h100-80g-sxm GPUs",
		},
		{
			name:   "pinned host cordoned",
			hosts:  z1(box("a", "cd-a", h100, 8, 8).cordoned()),
			req:    Request{TypeID: h100, Count: 1, HostID: "a"},
			reason: ReasonNotSchedulable, code: gpurent.CodeUnavailable,
			msg: "host a is not taking new instances (cordoned, draining or down)",
		},
		{
			name:   "pinned host busy",
			hosts:  z1(box("a", "cd-a", h100, 8, 8).used(0, 1, 2, 3, 4, 5), box("b", "cd-a", h100, 8, 8)),
			req:    Request{TypeID: h100, Count: 4, HostID: "a"},
			reason: ReasonNotEnoughGPUs, code: gpurent.CodeUnavailable,
			msg: "host a has 2 free h100-80g-sxm GPUs, 4 requested",
		},
		{
			name:   "pinned host too small",
			hosts:  z1(box("a", "cd-a", h100, 1, 1)),
			req:    Request{TypeID: h100, Count: 2, HostID: "a"},
			reason: ReasonNotEnoughGPUs, code: gpurent.CodeUnavailable,
			msg: "host a has 1 h100-80g-sxm GPU in all, 2 requested",
		},
		{
			name:   "pinned host short of CPU",
			hosts:  z1(box("a", "cd-a", h100, 8, 8).res(2_000, bigMem)),
			req:    Request{TypeID: h100, Count: 1, HostID: "a", CPUMilli: 8_000},
			reason: ReasonCPU, code: gpurent.CodeUnavailable,
			msg: "host a has 1 free h100-80g-sxm GPU but not enough CPU: 8 cores needed, 2 cores free",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Place(tc.req, tc.hosts)
			if !errors.Is(err, ErrNoCapacity) {
				t.Fatalf("err = %v, want ErrNoCapacity", err)
			}
			var nc *NoCapacityError
			if !errors.As(err, &nc) {
				t.Fatalf("err = %T, want *NoCapacityError", err)
			}
			if nc.Reason != tc.reason {
				t.Errorf("reason = %s, want %s", nc.Reason, tc.reason)
			}
			if got := gpurent.ErrorCode(err); got != tc.code {
				t.Errorf("code = %s, want %s", got, tc.code)
			}
			if err.Error() != tc.msg || gpurent.ErrorMessage(err) != tc.msg {
				t.Errorf("message = %q\n          want %q", err.Error(), tc.msg)
			}
			if errors.Is(err, ErrInvalidRequest) {
				t.Error("no-capacity error matched ErrInvalidRequest")
			}
			if msg := checkFailure(tc.req, tc.hosts, err); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestNoCapacityDetail(t *testing.T) {
	hosts := []Host{
		box("a", "z", h100, 8, 8).used(0, 1, 2, 3, 4).res(20_000, 8192),
		box("b", "z", h100, 4, 4).res(4_000, 100_000),
	}
	_, err := Place(Request{TypeID: h100, Count: 3, CPUMilli: 30_000}, hosts)
	var nc *NoCapacityError
	if !errors.As(err, &nc) {
		t.Fatalf("err = %v", err)
	}
	want := NoCapacityError{Reason: ReasonCPU, Req: Request{TypeID: h100, Count: 3, CPUMilli: 30_000},
		MostFree: 4, LargestHost: 8, MostCPUFree: 20_000, MostMemFreeMiB: 100_000, Message: nc.Message}
	if *nc != want {
		t.Fatalf("error = %+v\n want %+v", *nc, want)
	}
}

func TestFormatting(t *testing.T) {
	for in, want := range map[int64]string{0: "0 cores", 1000: "1 core", 1500: "1.5 cores", 250: "0.25 cores", 32000: "32 cores", 1001: "1.001 cores", -5: "0 cores"} {
		if got := cores(in); got != want {
			t.Errorf("cores(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[int64]string{1024: "1 GiB", 1536: "1536 MiB", 0: "0 GiB", 262144: "256 GiB"} {
		if got := mebibytes(in); got != want {
			t.Errorf("mebibytes(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestSpare(t *testing.T) {
	const maxI = int64(^uint64(0) >> 1)
	for _, c := range []struct {
		free, need int64
		want       uint64
	}{
		{0, 0, 0}, {-5, -10, 0}, {100, 0, 1_000_000}, {100, 100, 0}, {100, 50, 500_000},
		{3, 1, 666_666}, {maxI, 0, 1_000_000}, {maxI, maxI / 2, 500_000}, {maxI, 1, 999_999},
	} {
		if got := spare(c.free, c.need); got != c.want {
			t.Errorf("spare(%d, %d) = %d, want %d", c.free, c.need, got, c.want)
		}
	}
}

func TestAvailability(t *testing.T) {
	hosts := []Host{
		box("a", "z1", h100, 8, 8).used(0, 1, 2),              // 5 free
		box("b", "z1", h100, 8, 8).used(0).sick(1, 2),         // 5 free
		box("c", "z1", h100, 8, 8).cordoned(),                 // 0 free
		box("d", "z2", h100, 4, 4).used(0),                    // 3 free
		box("e", "z1", r4090, 8, 4).used(0, 1, 2, 3, 4, 5, 6), // 1 free
		{ID: "f", ZoneID: "z2", Schedulable: true, GPUs: []GPU{
			{ID: "f0", TypeID: r4090, Healthy: true, Free: true},
			{ID: "f1", TypeID: h100, Healthy: true, Free: true},
			{ID: "f2", TypeID: "", Healthy: true, Free: true},
		}},
	}
	got := Availability(hosts)
	want := map[string]map[string]Counts{
		h100: {
			"z1": {Total: 24, Free: 10, MaxPerHost: 5},
			"z2": {Total: 5, Free: 4, MaxPerHost: 3},
		},
		r4090: {
			"z1": {Total: 8, Free: 1, MaxPerHost: 1},
			"z2": {Total: 1, Free: 1, MaxPerHost: 1},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Availability =\n %v\nwant\n %v", got, want)
	}
	if len(Availability(nil)) != 0 {
		t.Fatal("Availability(nil) is not empty")
	}
}
