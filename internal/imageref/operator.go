package imageref

import (
	"net/url"
	"slices"
	"strings"

	"github.com/gpurent/gpurent"
)

// OperatorRegistry is the operator's own registry as `serve --registry`
// names it: Addr is host[:port], the prefix of its image references, and
// Scheme is how it is reached ("https", or "http" for one on loopback or a
// network the Docker daemons are told is insecure).
type OperatorRegistry struct {
	Addr   string
	Scheme string
}

// ParseRegistryURL reads `--registry`: https://host[:port], http://host[:port]
// or a bare host[:port] (https). It refuses credentials in the address
// (they come from a file, never the command line), a path, a query or a
// fragment: a registry is a host, its images are below it.
func ParseRegistryURL(s string) (OperatorRegistry, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return OperatorRegistry{}, gpurent.Errorf(gpurent.CodeInvalid, "the registry address is empty")
	}
	raw := s
	if !strings.Contains(s, "://") {
		raw = "https://" + s
	}
	u, err := url.Parse(raw)
	if err != nil {
		return OperatorRegistry{}, gpurent.Errorf(gpurent.CodeInvalid, "registry %q is not a URL like https://registry.example.com or http://127.0.0.1:5000", s)
	}
	switch {
	case u.User != nil:
		return OperatorRegistry{}, gpurent.Errorf(gpurent.CodeInvalid, "registry %q carries credentials: put them in a file and pass --registry-credentials FILE (a command line is readable by every user of the machine)", redact(u))
	case u.Scheme != "https" && u.Scheme != "http":
		return OperatorRegistry{}, gpurent.Errorf(gpurent.CodeInvalid, "registry %q: the scheme must be https or http, got %q", s, u.Scheme)
	case u.Host == "" || u.Opaque != "":
		return OperatorRegistry{}, gpurent.Errorf(gpurent.CodeInvalid, "registry %q names no host", s)
	case strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return OperatorRegistry{}, gpurent.Errorf(gpurent.CodeInvalid, "registry %q: name the registry's host (and port) only, without a path or query", s)
	}
	addr := strings.ToLower(u.Host)
	if addr == DockerHub || addr == "index.docker.io" || addr == "registry-1.docker.io" {
		return OperatorRegistry{}, gpurent.Errorf(gpurent.CodeInvalid, "registry %q is Docker Hub, not an operator's registry", s)
	}
	// The address must be what an image reference starts with.
	if got, err := Registry(addr + "/probe:1"); err != nil || got != addr {
		return OperatorRegistry{}, gpurent.Errorf(gpurent.CodeInvalid, "registry %q is not a registry host an image reference can name", s)
	}
	return OperatorRegistry{Addr: addr, Scheme: u.Scheme}, nil
}

// redact is u without its password, for messages.
func redact(u *url.URL) string {
	c := *u
	c.User = url.User("REDACTED")
	return c.String()
}

// Ref is the reference of the image at path (e.g. "base/pytorch:2.5") in
// the operator's registry.
func (r OperatorRegistry) Ref(path string) string {
	return r.Addr + "/" + strings.TrimPrefix(path, "/")
}

// Holds reports whether image is in this registry.
func (r OperatorRegistry) Holds(image string) bool {
	reg, err := Registry(image)
	return err == nil && r.Addr != "" && reg == r.Addr
}

// WithOperator is p that also allows the operator's own registry addr,
// wherever it is: loopback included, since the operator named it, not a
// customer (the demo's registry and a registry beside each GPU host are on
// the host itself). A nil p (any registry) stays nil, now with addr
// allowed too. An empty addr answers p unchanged.
func (p *Policy) WithOperator(addr string) *Policy {
	addr = strings.ToLower(strings.TrimSpace(addr))
	if addr == "" {
		return p
	}
	out := &Policy{any: true}
	if p != nil {
		out = &Policy{registries: slices.Clone(p.registries), any: p.any, operator: p.operator}
	}
	if !slices.Contains(out.operator, addr) {
		out.operator = append(out.operator, addr)
	}
	return out
}

// Operator answers whether reg (host[:port]) is an operator's registry of p.
func (p *Policy) isOperator(reg string) bool {
	return p != nil && slices.Contains(p.operator, reg)
}

// OperatorOnly allows the operator's own registry addr and nothing else:
// the policy when `serve --registry` is set and --image-registries is not.
func OperatorOnly(addr string) *Policy {
	return (&Policy{}).WithOperator(addr)
}
