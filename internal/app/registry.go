package app

import (
	"fmt"
	"os"

	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/imageref"
)

// RegistryConfig is the operator's registry (serve --registry).
type RegistryConfig struct {
	// URL is https://host[:port] or http://host[:port] ("": none).
	URL string
	// Username and Password are the pull credential agents get: an account
	// of a read-only endpoint of the registry (docs/security.md), never
	// one that can push. Empty: anonymous pulls.
	Username, Password string
	// MaxImageGiB bounds the size a base image of the catalog may state
	// (serve --max-image-gib; 0: none).
	MaxImageGiB int64
}

// imagePolicy is the allow-list customers' images are checked against and
// the registry handed to agents: the listed registries, plus the
// operator's own when there is one; with none listed and an operator's
// registry, that registry only.
func imagePolicy(listed []string, rc RegistryConfig) (*imageref.Policy, *agentproto.Registry, error) {
	if rc.URL == "" {
		if rc.Username != "" || rc.Password != "" {
			return nil, nil, fmt.Errorf("registry credentials without --registry: name the registry they are for")
		}
		p, err := imageref.NewPolicy(listed)
		return p, nil, err
	}
	reg, err := imageref.ParseRegistryURL(rc.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("--registry: %w", err)
	}
	if (rc.Username == "") != (rc.Password == "") {
		return nil, nil, fmt.Errorf("--registry-credentials: both a user name and a password are needed")
	}
	out := &agentproto.Registry{Addr: reg.Addr, Username: rc.Username, Password: rc.Password}
	if len(listed) == 0 {
		return imageref.OperatorOnly(reg.Addr), out, nil
	}
	p, err := imageref.NewPolicy(listed)
	if err != nil {
		return nil, nil, err
	}
	return p.WithOperator(reg.Addr), out, nil
}

// readRegistryCredentials reads --registry-credentials: a file only its
// owner can read, holding user:password or {"username", "password"}.
func readRegistryCredentials(path string) (imageref.Credential, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return imageref.Credential{}, fmt.Errorf("--registry-credentials: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return imageref.Credential{}, fmt.Errorf("--registry-credentials: %s can be read by other users (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return imageref.Credential{}, fmt.Errorf("--registry-credentials: %w", err)
	}
	c, err := imageref.ParseCredentials(b)
	if err != nil {
		return imageref.Credential{}, fmt.Errorf("--registry-credentials %s: %w", path, err)
	}
	return c, nil
}
