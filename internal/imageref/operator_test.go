package imageref

import (
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
)

func TestParseRegistryURL(t *testing.T) {
	for in, want := range map[string]OperatorRegistry{
		"https://Registry.Example.com": {Addr: "registry.example.com", Scheme: "https"},
		"registry.example.com:5000":    {Addr: "registry.example.com:5000", Scheme: "https"},
		"http://127.0.0.1:5000/":       {Addr: "127.0.0.1:5000", Scheme: "http"},
		"https://10.0.0.5:443":         {Addr: "10.0.0.5:443", Scheme: "https"},
		" http://reg.internal:5000 ":   {Addr: "reg.internal:5000", Scheme: "http"},
	} {
		got, err := ParseRegistryURL(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"https://user:secret@registry.example.com": "carries credentials",
		"http://user@127.0.0.1:5000":               "carries credentials",
		"ftp://registry.example.com":               "scheme must be https or http",
		"https://registry.example.com/ns":          "without a path",
		"https://registry.example.com?x=1":         "without a path",
		"https://":                                 "names no host",
		"":                                         "empty",
		"https://docker.io":                        "Docker Hub",
		"https://UPPER_case!":                      "",
	} {
		_, err := ParseRegistryURL(in)
		if !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want invalid saying %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error repeats the password: %v", in, err)
		}
	}
}

func TestOperatorRegistryAllowed(t *testing.T) {
	// On loopback (the demo): allowed because the operator named it; the
	// host's other loopback ports stay refused.
	p := OperatorOnly("127.0.0.1:5000")
	if err := p.Check("127.0.0.1:5000/base/shell:1"); err != nil {
		t.Errorf("operator's registry refused: %v", err)
	}
	for img, want := range map[string]string{
		"127.0.0.1:5001/x":     "loopback",
		"busybox":              "does not allow",
		"ghcr.io/a/b":          "does not allow",
		"localhost:5000/x":     "host itself",
		"u:p@127.0.0.1:5000/x": "user information",
	} {
		if err := p.Check(img); !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want invalid saying %q", img, err, want)
		}
	}
	if err := p.Check("busybox"); !strings.Contains(err.Error(), "allowed: 127.0.0.1:5000") {
		t.Errorf("the refusal does not name the operator's registry: %v", err)
	}
	// Added to an allow-list, it keeps the list.
	hub, err := NewPolicy([]string{"docker.io"})
	if err != nil {
		t.Fatal(err)
	}
	both := hub.WithOperator("10.0.0.5:5000")
	if both.Check("busybox") != nil || both.Check("10.0.0.5:5000/x:1") != nil || both.Check("10.0.0.6:5000/x") == nil {
		t.Error("docker.io plus the operator's registry: wrong answers")
	}
	if hub.Check("10.0.0.5:5000/x:1") == nil {
		t.Error("WithOperator changed the policy it was called on")
	}
	var anyp *Policy
	if w := anyp.WithOperator("127.0.0.1:5000"); w.Check("127.0.0.1:5000/x") != nil || w.Check("ghcr.io/a") != nil || w.Check("127.0.0.1:1/x") == nil {
		t.Error("any registry plus the operator's: wrong answers")
	}
	r := OperatorRegistry{Addr: "127.0.0.1:5000"}
	if !r.Holds("127.0.0.1:5000/a/b:1") || r.Holds("127.0.0.1:5001/a") || r.Holds("busybox") {
		t.Error("Holds")
	}
}

func FuzzParseRegistryURL(f *testing.F) {
	for _, s := range []string{"https://registry.example.com", "http://127.0.0.1:5000", "u:p@h", "https://h/x?y#z", "[::1]:5000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRegistryURL(s)
		if err != nil {
			return
		}
		if strings.ContainsAny(r.Addr, "@/?#") || (r.Scheme != "http" && r.Scheme != "https") {
			t.Fatalf("%q parsed to %+v", s, r)
		}
		if got, err := Registry(r.Ref("x:1")); err != nil || got != r.Addr {
			t.Fatalf("%q: a reference in it names %q (%v)", s, got, err)
		}
	})
}
