package imageref

import (
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
)

func TestCheck(t *testing.T) {
	p, err := NewPolicy([]string{"docker.io", "Registry.Example.com", "10.1.2.3:5000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{"busybox", "library/busybox:1.36", "pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime",
		"docker.io/library/ubuntu:22.04", "index.docker.io/library/ubuntu", "registry.example.com/team/base:1",
		"registry.example.com/x@sha256:" + strings.Repeat("a", 64), "10.1.2.3:5000/base:1"} {
		if err := p.Check(ok); err != nil {
			t.Errorf("%s: %v, want allowed", ok, err)
		}
	}
	for img, want := range map[string]string{
		"localhost:5000/x":                   "host itself",
		"localhost/x":                        "host itself",
		"reg.localhost/x":                    "host itself",
		"127.0.0.1:5000/x":                   "loopback",
		"[::1]:5000/x":                       "loopback",
		"169.254.169.254/latest":             "link-local",
		"0.0.0.0:5000/x":                     "loopback, link-local or unspecified",
		"192.168.1.10:5000/x":                "private address",
		"10.9.9.9/x":                         "private address",
		"user:secret@registry.example.com/x": "user information",
		"ghcr.io/owner/img:1":                "does not allow",
		"quay.io/x/y":                        "does not allow",
		"Upper/Case":                         "not a valid image reference",
		"":                                   "not a valid image reference",
	} {
		err := p.Check(img)
		if !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want invalid saying %q", img, err, want)
		}
	}
	// Any registry, still never the host's own.
	anyp, err := NewPolicy([]string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	if err := anyp.Check("ghcr.io/owner/img"); err != nil {
		t.Errorf("any: %v", err)
	}
	if err := anyp.Check("127.0.0.1:5000/x"); err == nil {
		t.Error("any allowed loopback")
	}
	if def, _ := NewPolicy(nil); def.Check("busybox") != nil || def.Check("ghcr.io/a/b") == nil {
		t.Error("the empty list must allow Docker Hub only")
	}
	for _, bad := range []string{"localhost:5000", "127.0.0.1", "registry.example.com/ns", "169.254.169.254"} {
		if _, err := NewPolicy([]string{bad}); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("allow-list entry %q: %v, want invalid", bad, err)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"busybox", "localhost:5000/x", "a@b/c", "[::1]:1/x", "registry.example.com/x:1"} {
		f.Add(s)
	}
	p, err := NewPolicy([]string{"docker.io", "registry.example.com"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p.Check(s) != nil {
			return
		}
		reg, err := Registry(s)
		if err != nil || (reg != "docker.io" && reg != "registry.example.com") {
			t.Fatalf("%q allowed with registry %q (%v)", s, reg, err)
		}
	})
}
