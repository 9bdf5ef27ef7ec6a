package sched

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
)

// degrade lists GPUs by index as degraded at the price share permille.
func (h Host) degrade(permille int, idx ...int) Host {
	h.GPUs = slices.Clone(h.GPUs)
	for _, i := range idx {
		h.GPUs[i].Degraded, h.GPUs[i].PricePermille = true, permille
	}
	return h
}

func TestPlaceDegraded(t *testing.T) {
	a := box("a", "z1", h100, 8, 4).degrade(850, 5, 6, 7)
	b := box("b", "z1", h100, 4, 4).degrade(880, 0, 1).used(0)

	cases := []struct {
		name string
		req  Request
		want Placement
	}{
		{"full price never gets degraded GPUs", Request{TypeID: h100, Count: 5},
			Placement{HostID: "a", GPUIDs: ids("a", 0, 1, 2, 3, 4)}},
		// b has 2 full-price free (2, 3) and fits 2 exactly; a would leave 3.
		{"full price best fit counts full-price GPUs only", Request{TypeID: h100, Count: 2},
			Placement{HostID: "b", GPUIDs: ids("b", 2, 3)}},
		// b has one degraded free (1); a has three: the best fit for one
		// degraded GPU is b.
		{"degraded best fit", Request{TypeID: h100, Count: 1, Degraded: true},
			Placement{HostID: "b", GPUIDs: ids("b", 1)}},
		{"degraded takes only degraded GPUs", Request{TypeID: h100, Count: 3, Degraded: true},
			Placement{HostID: "a", GPUIDs: ids("a", 5, 6, 7)}},
	}
	for _, c := range cases {
		got, err := Place(c.req, []Host{a, b})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestPlaceDegradedRefusals(t *testing.T) {
	onlyDegraded := box("a", "z1", h100, 4, 4).degrade(850, 0, 1, 2, 3)
	full := box("b", "z1", h100, 4, 4)

	// A full-price request is refused where only degraded GPUs are free,
	// and told they are there.
	_, err := Place(Request{TypeID: h100, Count: 2}, []Host{onlyDegraded})
	var nc *NoCapacityError
	if !errors.As(err, &nc) {
		t.Fatalf("full price on degraded-only fleet: err = %v", err)
	}
	if nc.Reason != ReasonUnknownType || !strings.Contains(nc.Message, "2 degraded "+h100+" GPUs") {
		t.Errorf("full price on degraded-only fleet: %s %q", nc.Reason, nc.Message)
	}

	// A degraded request is refused where none are listed, and told the
	// full-price ones are free.
	_, err = Place(Request{TypeID: h100, Count: 2, Degraded: true}, []Host{full})
	if !errors.As(err, &nc) {
		t.Fatalf("degraded on full-price fleet: err = %v", err)
	}
	if want := "sold out: no degraded " + h100 + " GPUs are in service in any zone"; !strings.HasPrefix(nc.Message, want) ||
		!strings.Contains(nc.Message, "at the full price are free") {
		t.Errorf("degraded on full-price fleet: %q", nc.Message)
	}

	// More degraded GPUs than a host lists: the largest is named.
	_, err = Place(Request{TypeID: h100, Count: 3, Degraded: true}, []Host{full.degrade(900, 2, 3)})
	if !errors.As(err, &nc) || nc.Reason != ReasonNotEnoughGPUs || nc.LargestHost != 2 ||
		!strings.Contains(nc.Message, "3 degraded "+h100+" GPUs") {
		t.Errorf("too many degraded: %v (%+v)", err, nc)
	}

	// A degraded listing of no GPUs is malformed.
	_, err = Place(Request{TypeID: h100, Count: 0, Degraded: true}, []Host{onlyDegraded})
	if !errors.Is(err, ErrInvalidRequest) || gpurent.ErrorCode(err) != gpurent.CodeInvalid {
		t.Errorf("degraded with count 0: %v", err)
	}

	// A GPU a benchmark job holds is not free (the snapshot says so):
	// nothing here gives it out.
	held := full.used(0, 1, 2)
	if _, err := Place(Request{TypeID: h100, Count: 2}, []Host{held}); !errors.Is(err, ErrNoCapacity) {
		t.Errorf("held GPUs placed: %v", err)
	}
}

func TestAvailabilityDegraded(t *testing.T) {
	hosts := []Host{
		box("a", "z1", h100, 8, 8).degrade(850, 6, 7).used(0),     // 5 full, 2 degraded free
		box("b", "z1", h100, 4, 4).degrade(880, 0, 1, 2).used(2),  // 1 full, 2 degraded free
		box("c", "z1", h100, 4, 4).degrade(700, 0).sick(0),        // degraded but sick
		box("d", "z1", h100, 4, 4).degrade(600, 0).cordoned(),     // degraded, host closed
		box("e", "z2", h100, 2, 2).degrade(0, 0).degrade(1200, 1), // bad shares: full price
		box("f", "z2", r4090, 2, 2),                               // nothing degraded
	}
	got := Availability(hosts)
	want := map[string]map[string]Counts{
		h100: {
			"z1": {Total: 20, Free: 9, MaxPerHost: 5, DegradedFree: 4, DegradedMaxPerHost: 2,
				MinPricePermille: 850, MaxPricePermille: 880},
			"z2": {Total: 2, Free: 0, MaxPerHost: 0, DegradedFree: 2, DegradedMaxPerHost: 2,
				MinPricePermille: 1000, MaxPricePermille: 1000},
		},
		r4090: {"z2": {Total: 2, Free: 2, MaxPerHost: 2}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Availability =\n %+v\nwant\n %+v", got, want)
	}
}

func TestPriceShare(t *testing.T) {
	for in, want := range map[int]int{-5: 1000, 0: 1000, 1: 1, 850: 850, 999: 999, 1000: 1000, 1500: 1000} {
		if got := PriceShare(in); got != want {
			t.Errorf("PriceShare(%d) = %d, want %d", in, got, want)
		}
	}
}
