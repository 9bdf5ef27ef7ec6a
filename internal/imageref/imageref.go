// Package imageref checks the container images customers ask for against
// the operator's allow-list of registries. A reference is parsed the way
// Docker does (github.com/distribution/reference: "busybox" is
// docker.io/library/busybox), and its registry must be one the operator
// listed. Whatever the list says, a registry on the host itself
// ("localhost", *.localhost, a loopback, link-local or unspecified IP
// literal) and a reference with user information ("user:pass@host/...")
// are refused: an agent pulls as root on the GPU host, so a customer must
// not make it dial the host's own or its network's internal services. A
// private-range IP literal is accepted only when the operator lists it.
package imageref

import (
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/distribution/reference"

	"github.com/gpurent/gpurent"
)

// DockerHub is Docker Hub's registry name, the registry of a reference
// that names none.
const DockerHub = "docker.io"

// Any in the allow-list accepts every registry (still not the host's own).
const Any = "*"

// Policy is the operator's allow-list of registries. A nil *Policy accepts
// every reference that parses and is not refused outright.
type Policy struct {
	registries []string // lower case host[:port], sorted
	any        bool
	// operator are the operator's own registries (WithOperator): always
	// allowed, wherever they are.
	operator []string
}

// NewPolicy makes the policy from registry names (host or host:port; "*"
// for any). An empty list allows Docker Hub only.
func NewPolicy(registries []string) (*Policy, error) {
	p := &Policy{}
	for _, r := range registries {
		r = strings.ToLower(strings.TrimSpace(r))
		switch {
		case r == "":
			continue
		case r == Any:
			p.any = true
			continue
		case r == "index.docker.io" || r == "registry-1.docker.io":
			r = DockerHub
		}
		if strings.ContainsAny(r, "/@") {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "registry %q: name a registry host (registry.example.com or registry.example.com:5000), not an image", r)
		}
		if err := hostAllowed(r, true); err != nil {
			return nil, err
		}
		p.registries = append(p.registries, r)
	}
	if len(p.registries) == 0 && !p.any {
		p.registries = []string{DockerHub}
	}
	slices.Sort(p.registries)
	p.registries = slices.Compact(p.registries)
	return p, nil
}

// ParseList splits a comma-separated list (a flag's value).
func ParseList(s string) []string {
	var out []string
	for _, r := range strings.Split(s, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// Registries are the allowed registries ("*" included when any is).
func (p *Policy) Registries() []string {
	if p == nil {
		return []string{Any}
	}
	out := slices.Concat(p.operator, p.registries)
	if p.any {
		out = append(out, Any)
	}
	return out
}

// Registry parses image and answers its registry (lower case host[:port]).
func Registry(image string) (string, error) {
	image = strings.TrimSpace(image)
	first, _, hasSlash := strings.Cut(image, "/")
	if hasSlash && strings.Contains(first, "@") {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "image %q carries user information: registry credentials are the operator's, never part of an image name", image)
	}
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "image %q is not a valid image reference (like pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime)", image)
	}
	return strings.ToLower(reference.Domain(named)), nil
}

// Check refuses image unless its registry is allowed. The error (invalid)
// says why and which registries are allowed.
func (p *Policy) Check(image string) error {
	reg, err := Registry(image)
	if err != nil {
		return err
	}
	if p.isOperator(reg) {
		return nil
	}
	listed := p != nil && slices.Contains(p.registries, reg)
	if err := hostAllowed(reg, listed); err != nil {
		return gpurent.Errorf(gpurent.CodeInvalid, "image %q: %s", image, gpurent.ErrorMessage(err))
	}
	if p == nil || p.any || listed {
		return nil
	}
	return gpurent.Errorf(gpurent.CodeInvalid, "image %q is from registry %s, which this operator does not allow (allowed: %s)",
		image, reg, strings.Join(p.Registries(), ", "))
}

// hostAllowed refuses a registry on the host itself, and a private-range
// IP literal unless listed.
func hostAllowed(reg string, listed bool) error {
	host := reg
	if h, _, err := net.SplitHostPort(reg); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return gpurent.Errorf(gpurent.CodeInvalid, "registry %s is on the host itself, which is never allowed", reg)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return nil // a name
	}
	addr = addr.Unmap()
	switch {
	case addr.IsLoopback(), addr.IsUnspecified(), addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast(), addr.IsMulticast():
		return gpurent.Errorf(gpurent.CodeInvalid, "registry %s is a loopback, link-local or unspecified address, which is never allowed", reg)
	case addr.IsPrivate() && !listed:
		return gpurent.Errorf(gpurent.CodeInvalid, "registry %s is a private address the operator has not listed", reg)
	}
	return nil
}
