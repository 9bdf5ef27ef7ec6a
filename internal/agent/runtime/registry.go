package runtime

import (
	"context"
	"strings"
	"sync"
	"time"
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

// ImageSaver is a runtime that can save an instance's system disk (the
// writable layer of its container, never its data volume) as an image in
// a registry: the image the instance was made from, with that layer on
// top. The instance keeps running; it may be paused for a moment while
// the layer is read, which the result says.
type ImageSaver interface {
	SaveImage(ctx context.Context, req SaveRequest, progress func(SaveProgress)) (SaveResult, error)
}

// SaveRequest asks for one instance's system disk to be pushed as Ref.
type SaveRequest struct {
	InstanceID string
	// Ref is the destination, host[:port]/repository:tag, in the
	// operator's registry.
	Ref string
	// Push may push to Ref's repository and pull the instance's base
	// image from the same registry.
	Push RegistryAuth
	// MaxBytes bounds the layer's uncompressed size; 0 is no bound. A
	// larger layer fails the save and pushes nothing under Ref.
	MaxBytes int64
}

// SaveProgress is how a save in progress stands.
type SaveProgress struct {
	// Phase is "reading" (the layer, the instance paused), "pushing" or
	// "done".
	Phase string
	// Bytes is how much of the phase is done: uncompressed bytes read, or
	// compressed bytes pushed.
	Bytes int64
}

// SaveResult is a saved image.
type SaveResult struct {
	// Digest is the pushed manifest's, "sha256:…".
	Digest string
	// LayerBytes is the new layer's compressed size; SizeBytes the whole
	// image's (its layers and config), what a quota counts.
	LayerBytes int64
	SizeBytes  int64
	// Paused is how long the instance was paused.
	Paused time.Duration
}
