package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

func testBaseImages(t *testing.T, s gpurent.Store) {
	ctx := context.Background()
	if l, err := s.ListBaseImages(ctx); err != nil || len(l) != 0 || l == nil {
		t.Fatalf("an empty catalog: %v %v (want an empty, non-nil list)", l, err)
	}
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	img := &gpurent.BaseImage{Name: "pytorch:2.5-cuda12.4", Ref: "reg.example.com/base/pytorch:2.5.1", Description: "PyTorch",
		Framework: "pytorch", Versions: map[string]string{"pytorch": "2.5.1", "cuda": "12.4", "python": "3.11"},
		MinCUDA: "12.4", GPUTypes: []string{"h100-80g-sxm", "a100-80g-sxm"}, SizeBytes: 7 << 30, UpdatedAt: t0}
	must(t, s.PutBaseImage(ctx, img), "put")
	if !img.CreatedAt.Equal(t0) || !img.UpdatedAt.Equal(t0) {
		t.Errorf("times after put: %v %v", img.CreatedAt, img.UpdatedAt)
	}
	got, err := s.BaseImage(ctx, img.Name)
	must(t, err, "read")
	if got.Ref != img.Ref || got.Versions["cuda"] != "12.4" || len(got.Versions) != 3 || !slices.Equal(got.GPUTypes, img.GPUTypes) ||
		got.SizeBytes != 7<<30 || got.Prepull || got.MinCUDA != "12.4" || got.Framework != "pytorch" || got.Description != "PyTorch" {
		t.Errorf("read back: %+v", got)
	}
	// Replaced by name: the first put's CreatedAt stays.
	t1 := t0.Add(time.Hour)
	shell := &gpurent.BaseImage{Name: "shell:1", Ref: "reg.example.com/base/shell:1", UpdatedAt: t0}
	must(t, s.PutBaseImage(ctx, shell), "put shell")
	if shell.Versions != nil || shell.GPUTypes != nil {
		t.Errorf("an image without versions or GPU types reads back %+v", shell)
	}
	repl := &gpurent.BaseImage{Name: img.Name, Ref: "reg.example.com/base/pytorch:2.5.2", UpdatedAt: t1, Prepull: true}
	must(t, s.PutBaseImage(ctx, repl), "replace")
	if !repl.CreatedAt.Equal(t0) || !repl.UpdatedAt.Equal(t1) || repl.Ref != "reg.example.com/base/pytorch:2.5.2" || !repl.Prepull || repl.GPUTypes != nil {
		t.Errorf("replaced: %+v", repl)
	}
	l, err := s.ListBaseImages(ctx)
	must(t, err, "list")
	if len(l) != 2 || l[0].Name != "pytorch:2.5-cuda12.4" || l[1].Name != "shell:1" {
		t.Fatalf("list: %+v", l)
	}
	must(t, s.SetBaseImagePrepull(ctx, "shell:1", true, t1), "prepull")
	if got, _ := s.BaseImage(ctx, "shell:1"); !got.Prepull || !got.UpdatedAt.Equal(t1) {
		t.Errorf("after prepull: %+v", got)
	}
	wantCode(t, s.SetBaseImagePrepull(ctx, "nope:1", true, t1), gpurent.CodeNotFound, "prepull unknown")
	wantCode(t, s.PutBaseImage(ctx, &gpurent.BaseImage{Name: "x"}), gpurent.CodeInvalid, "put without a reference")
	wantCode(t, s.PutBaseImage(ctx, &gpurent.BaseImage{Name: "x", Ref: "r", GPUTypes: []string{"a,b"}}), gpurent.CodeInvalid, "a comma in a GPU type")
	must(t, s.DeleteBaseImage(ctx, "shell:1"), "delete")
	wantCode(t, s.DeleteBaseImage(ctx, "shell:1"), gpurent.CodeNotFound, "delete twice")
	_, err = s.BaseImage(ctx, "shell:1")
	wantCode(t, err, gpurent.CodeNotFound, "read deleted")
}

func testHostImages(t *testing.T, s gpurent.Store) {
	ctx := context.Background()
	a := SeedHost(t, s, "img-a", "h100-80g-sxm", 1)
	b := SeedHost(t, s, "img-b", "h100-80g-sxm", 1)
	must(t, s.SetHostImages(ctx, a.ID, []string{"r/x:1", "r/y:1", "r/x:1"}), "set a")
	must(t, s.SetHostImages(ctx, b.ID, []string{"r/x:1"}), "set b")
	ids, err := s.HostsHolding(ctx, "r/x:1")
	must(t, err, "holding x")
	want := []string{a.ID, b.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("holding x: %v, want %v", ids, want)
	}
	// Replaced whole.
	must(t, s.SetHostImages(ctx, a.ID, []string{"r/z:1"}), "replace a")
	if ids, _ := s.HostsHolding(ctx, "r/y:1"); len(ids) != 0 {
		t.Errorf("y after a's replacement: %v", ids)
	}
	if ids, _ := s.HostsHolding(ctx, "r/x:1"); !slices.Equal(ids, []string{b.ID}) {
		t.Errorf("x after a's replacement: %v", ids)
	}
	must(t, s.SetHostImages(ctx, b.ID, nil), "clear b")
	if ids, _ := s.HostsHolding(ctx, "r/x:1"); len(ids) != 0 {
		t.Errorf("x after clearing: %v", ids)
	}
}
