package runtime

import (
	"context"
	"strings"
	"sync"
)

// RegistryAuth is a pull credential for one registry (host[:port]).
type RegistryAuth struct {
	Addr     string
	Username string
	Password string
}

// Registries holds the pull credentials the control plane hands the agent
// (the operator's registry, agentproto.Registry). The agent writes it as
// desired states arrive; a runtime that pulls reads it at each pull. The
// zero value holds none and is ready to use; it is safe for concurrent
// use.
type Registries struct {
	mu   sync.Mutex
	auth map[string]RegistryAuth
}

// Put sets the credential for a.Addr, replacing any before; a credential
// without a user name removes it (the registry takes anonymous pulls).
func (r *Registries) Put(a RegistryAuth) {
	addr := strings.ToLower(a.Addr)
	if addr == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.Username == "" {
		delete(r.auth, addr)
		return
	}
	if r.auth == nil {
		r.auth = map[string]RegistryAuth{}
	}
	a.Addr = addr
	r.auth[addr] = a
}

// For answers the credential for registry addr (host[:port]), if held. A
// nil *Registries holds none.
func (r *Registries) For(addr string) (RegistryAuth, bool) {
	if r == nil {
		return RegistryAuth{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.auth[strings.ToLower(addr)]
	return a, ok
}

// PullReporter is a runtime that tells how a pull in progress stands, so
// that an instance waiting for its image says so instead of waiting
// silently.
type PullReporter interface {
	// PullProgress describes the pull of ref in progress ("" and false
	// when none is).
	PullProgress(ref string) (string, bool)
}

// Prepuller is a runtime that can pull images ahead of any instance: the
// operator's catalog images marked to pre-pull (agentproto.Desired.Prepull).
// The Docker runtime is one; the process runtime runs no images.
type Prepuller interface {
	// HasImage reports whether ref is on the host.
	HasImage(ctx context.Context, ref string) (bool, error)
	// PullImage pulls ref, as a run would (credentials, size limit).
	PullImage(ctx context.Context, ref string) error
}
