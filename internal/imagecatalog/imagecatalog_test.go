package imagecatalog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/imagecatalog"
	"github.com/gpurent/gpurent/internal/imageref"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

type agentsSpy struct{ n int }

func (a *agentsSpy) PrepullChanged(context.Context) error { a.n++; return nil }

func newService(t *testing.T) (*imagecatalog.Service, *agentsSpy) {
	st := storetest.SQLite(t)
	storetest.SeedCatalog(t, st)
	spy := &agentsSpy{}
	return imagecatalog.New(imagecatalog.Config{Store: st, Images: imageref.OperatorOnly("reg.example.com"), Agents: spy}), spy
}

var (
	op       = &gpurent.Account{ID: "acc-op", Role: gpurent.RoleOperator}
	customer = &gpurent.Account{ID: "acc-c", Role: gpurent.RoleCustomer}
)

func TestCatalog(t *testing.T) {
	s, spy := newService(t)
	ctx := t.Context()
	img, err := s.Put(ctx, op, gpurent.BaseImage{Name: "pytorch:2.5-cuda12.4", Ref: "reg.example.com/base/pytorch:2.5.1",
		Framework: "PyTorch", Versions: map[string]string{"PyTorch": "2.5.1", "cuda": "12.4"}, MinCUDA: "12.4",
		GPUTypes: []string{"h100-80g-sxm", "a100-80g-sxm", "h100-80g-sxm"}, SizeBytes: 8 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if img.Framework != "pytorch" || img.Versions["pytorch"] != "2.5.1" || len(img.GPUTypes) != 2 || img.GPUTypes[0] != "a100-80g-sxm" {
		t.Errorf("normalised: %+v", img)
	}
	if spy.n != 0 {
		t.Errorf("an image not pre-pulled told the agents %d times", spy.n)
	}
	l, err := s.List(ctx, customer)
	if err != nil || len(l) != 1 {
		t.Fatalf("a customer's list: %v %v", l, err)
	}
	got, err := s.Resolve(ctx, " pytorch:2.5-cuda12.4 ")
	if err != nil || got == nil || got.Ref != "reg.example.com/base/pytorch:2.5.1" {
		t.Fatalf("resolve: %+v %v", got, err)
	}
	if got, err := s.Resolve(ctx, "ubuntu:24.04"); got != nil || err != nil {
		t.Errorf("a name not in the catalog resolved: %+v %v", got, err)
	}
	if got, err := s.Resolve(ctx, "reg.example.com/base/pytorch:2.5.1"); got != nil || err != nil {
		t.Errorf("a reference resolved as a name: %+v %v", got, err)
	}
	if err := imagecatalog.Suits(nil, "rtx4090-24g"); err != nil {
		t.Errorf("nil suits everything: %v", err)
	}
	if err := imagecatalog.Suits(img, "rtx4090-24g"); !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), "suits GPU types a100-80g-sxm, h100-80g-sxm only") {
		t.Errorf("an unsuited type: %v", err)
	}
	if _, err := s.SetPrepull(ctx, op, img.Name, true); err != nil {
		t.Fatal(err)
	}
	if refs, _ := s.Prepulled(ctx); len(refs) != 1 || refs[0] != img.Ref || spy.n != 1 {
		t.Errorf("pre-pulled %v, agents told %d times", refs, spy.n)
	}
	if err := s.Remove(ctx, op, img.Name); err != nil {
		t.Fatal(err)
	}
	if spy.n != 2 {
		t.Errorf("removing a pre-pulled image told the agents %d times", spy.n)
	}
	if err := s.Remove(ctx, op, img.Name); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("remove twice: %v", err)
	}
}

// TestCatalogAbuse: a customer cannot change the catalog, and entries are
// refused for odd names, registries off the policy, unknown GPU types and
// text that does not belong on one line.
func TestCatalogSizeLimit(t *testing.T) {
	st := storetest.SQLite(t)
	storetest.SeedCatalog(t, st)
	s := imagecatalog.New(imagecatalog.Config{Store: st, Images: imageref.OperatorOnly("reg.example.com"), MaxImageBytes: 20 << 30})
	img := gpurent.BaseImage{Name: "big:1", Ref: "reg.example.com/base/big:1", SizeBytes: 21 << 30}
	if _, err := s.Put(t.Context(), op, img); !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), "over this operator's image size limit of 20.0 GiB") {
		t.Errorf("an image over the limit: %v", err)
	}
	img.SizeBytes = 20 << 30
	if _, err := s.Put(t.Context(), op, img); err != nil {
		t.Errorf("an image at the limit: %v", err)
	}
}

func TestCatalogAbuse(t *testing.T) {
	s, _ := newService(t)
	ctx := t.Context()
	good := gpurent.BaseImage{Name: "shell:1", Ref: "reg.example.com/base/shell:1"}
	if _, err := s.Put(ctx, customer, good); !gpurent.IsCode(err, gpurent.CodeForbidden) {
		t.Errorf("a customer's put: %v", err)
	}
	if _, err := s.Put(ctx, nil, good); !gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		t.Errorf("an anonymous put: %v", err)
	}
	if _, err := s.Put(ctx, op, good); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, customer, "shell:1"); !gpurent.IsCode(err, gpurent.CodeForbidden) {
		t.Errorf("a customer's remove: %v", err)
	}
	if _, err := s.SetPrepull(ctx, customer, "shell:1", true); !gpurent.IsCode(err, gpurent.CodeForbidden) {
		t.Errorf("a customer's prepull: %v", err)
	}
	if _, err := s.List(ctx, nil); !gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		t.Errorf("an anonymous list: %v", err)
	}
	for _, name := range []string{"", "Shell:1", "../etc:1", "a b", "shell:1:2", "shell/x:1", "-x", "x-", "shell:", "shell:-1",
		"ünï:1", "x\ny", "reg.example.com/base/shell:1", strings.Repeat("a", 65), "a:" + strings.Repeat("1", 65), "<script>"} {
		bad := good
		bad.Name = name
		if _, err := s.Put(ctx, op, bad); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("name %q: %v, want invalid", name, err)
		}
	}
	for ref, want := range map[string]string{
		"ghcr.io/evil/x:1":               "does not allow",
		"127.0.0.1:5000/x":               "loopback",
		"user:pw@reg.example.com/base/x": "user information",
		"":                               "reference in the registry is required",
		"reg.example.com/UPPER":          "not a valid image reference",
	} {
		bad := good
		bad.Ref = ref
		if _, err := s.Put(ctx, op, bad); !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("ref %q: %v, want invalid saying %q", ref, err, want)
		}
	}
	for what, mod := range map[string]func(*gpurent.BaseImage){
		"unknown GPU type":    func(b *gpurent.BaseImage) { b.GPUTypes = []string{"tpu-v5"} },
		"description newline": func(b *gpurent.BaseImage) { b.Description = "one\ntwo" },
		"long description":    func(b *gpurent.BaseImage) { b.Description = strings.Repeat("字", 501) },
		"version key":         func(b *gpurent.BaseImage) { b.Versions = map[string]string{"Py Torch": "2"} },
		"version value":       func(b *gpurent.BaseImage) { b.Versions = map[string]string{"pytorch": "2; rm -rf"} },
		"min cuda":            func(b *gpurent.BaseImage) { b.MinCUDA = "twelve" },
		"negative size":       func(b *gpurent.BaseImage) { b.SizeBytes = -1 },
		"framework":           func(b *gpurent.BaseImage) { b.Framework = "Py Torch!" },
	} {
		bad := good
		mod(&bad)
		if _, err := s.Put(ctx, op, bad); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: %v, want invalid", what, err)
		}
	}
}
