package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

func testPriceVersions(t *testing.T, s gpurent.Store) {
	ctx := context.Background()
	if vs, err := s.PriceVersions(ctx); err != nil || len(vs) != 0 {
		t.Fatalf("empty store: %v %v", vs, err)
	}
	later := time.Date(2026, 12, 1, 0, 0, 0, 123456000, time.FixedZone("CST", 8*3600))
	earlier := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := &gpurent.PriceVersion{EffectiveAt: later, Document: []byte(`{"v":2}`), Note: "December", CreatedBy: "acc-x"}
	b := &gpurent.PriceVersion{EffectiveAt: earlier, Document: []byte(`{"v":1}`)}
	for _, v := range []*gpurent.PriceVersion{a, b} {
		if err := s.AddPriceVersion(ctx, v); err != nil {
			t.Fatal(err)
		}
		if v.ID == "" || v.CreatedAt.IsZero() {
			t.Fatalf("id and created_at not filled: %+v", v)
		}
	}
	dup := &gpurent.PriceVersion{EffectiveAt: later.UTC(), Document: []byte(`{}`)}
	if err := s.AddPriceVersion(ctx, dup); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("same effective time again: %v, want conflict", err)
	}
	for _, bad := range []*gpurent.PriceVersion{{Document: []byte(`{}`)}, {EffectiveAt: later.Add(time.Hour)}} {
		if err := s.AddPriceVersion(ctx, bad); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%+v: %v, want invalid", bad, err)
		}
	}
	vs, err := s.PriceVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].ID != b.ID || vs[1].ID != a.ID {
		t.Fatalf("order by effective time: %+v", vs)
	}
	got := vs[1]
	if !got.EffectiveAt.Equal(later) || got.EffectiveAt.Location() != time.UTC || string(got.Document) != `{"v":2}` ||
		got.Note != "December" || got.CreatedBy != "acc-x" || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("round trip: got %+v, want %+v", got, a)
	}
}
