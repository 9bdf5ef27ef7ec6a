package agent

import (
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/imageref"
)

// takeRegistry keeps the operator's registry of a desired state: its
// address joins the images the agent pulls, its pull credential goes to the
// runtime. A state without one drops the address (the operator stopped
// running one); the credential is kept for images already placed.
func (a *Agent) takeRegistry(r *agentproto.Registry) {
	addr := ""
	if r != nil {
		addr = r.Addr
		if a.cfg.Registries != nil {
			a.cfg.Registries.Put(runtime.RegistryAuth{Addr: r.Addr, Username: r.Username, Password: r.Password})
		}
	}
	if prev := a.operatorRegistry.Load(); prev == nil || *prev != addr {
		a.log.Info("agent: operator's registry", "addr", addr)
	}
	a.operatorRegistry.Store(&addr)
}

// images is the policy an image to run is checked against: the agent's own
// allow-list, and the operator's registry the control plane named.
func (a *Agent) images() *imageref.Policy {
	if p := a.operatorRegistry.Load(); p != nil && *p != "" {
		return a.cfg.Images.WithOperator(*p)
	}
	return a.cfg.Images
}
