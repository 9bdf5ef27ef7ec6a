package sched

import "testing"

// TestPlacePrefersHostsHoldingTheImage: a host that holds the image wins
// over a better fit that does not; among hosts that hold it, best fit
// still decides; a preferred host that does not fit is not chosen; and the
// order of the snapshot does not matter.
func TestPlacePrefersHostsHoldingTheImage(t *testing.T) {
	tight := box("a-tight", "z1", h100, 8, 8).used(0, 1, 2, 3, 4, 5) // 2 free: the best fit for 2
	roomy := box("b-roomy", "z1", h100, 8, 8)                        // 8 free
	roomy2 := box("c-roomy", "z1", h100, 8, 8).used(0, 1)            // 6 free
	full := box("d-full", "z1", h100, 8, 8).used(0, 1, 2, 3, 4, 5, 6, 7)
	for _, tc := range []struct {
		name   string
		prefer []string
		want   string
	}{
		{"no preference: best fit", nil, "a-tight"},
		{"the roomy host holds it", []string{"b-roomy"}, "b-roomy"},
		{"two hold it: best fit among them", []string{"b-roomy", "c-roomy"}, "c-roomy"},
		{"the best fit holds it too", []string{"a-tight", "b-roomy"}, "a-tight"},
		{"only a full host holds it", []string{"d-full"}, "a-tight"},
		{"an unknown host holds it", []string{"zz-gone"}, "a-tight"},
	} {
		for _, order := range [][]Host{{tight, roomy, roomy2, full}, {full, roomy2, roomy, tight}} {
			p, err := Place(Request{TypeID: h100, Count: 2, Prefer: NewHostSet(tc.prefer...)}, order)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if p.HostID != tc.want {
				t.Errorf("%s: placed on %s, want %s", tc.name, p.HostID, tc.want)
			}
		}
	}
	if s := NewHostSet("b", "a", "b"); !s.Has("a") || !s.Has("b") || s.Has("c") || s.Len() != 2 {
		t.Errorf("host set: %+v", s)
	}
	var none *HostSet
	if none.Has("a") || none.Len() != 0 {
		t.Error("a nil host set holds something")
	}
}
