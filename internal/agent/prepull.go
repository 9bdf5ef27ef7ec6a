package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// prepullRetry is how often the images to pre-pull are checked again (a
// pull that failed, an image someone removed from the host).
const prepullRetry = time.Minute

// prepullState is the agent's side of pre-pulling: the references the
// latest desired state lists, and those the host held at the last look.
type prepullState struct {
	mu   sync.Mutex
	want []string
	held []string
	// unsent: held changed since a report carried it (false before the
	// first look: nothing is known yet).
	unsent bool
	kick   chan struct{}
}

func newPrepullState() *prepullState {
	return &prepullState{kick: make(chan struct{}, 1)}
}

// update takes the list of a desired state and wakes the loop if it changed.
func (p *prepullState) update(refs []string) {
	refs = slices.Compact(slices.Sorted(slices.Values(refs)))
	p.mu.Lock()
	same := slices.Equal(p.want, refs)
	p.want = refs
	p.mu.Unlock()
	if !same {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// forReport answers what the next report carries: the held images when
// they changed since a report carried them, else nil.
func (p *prepullState) forReport() *agentproto.HeldImages {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.unsent {
		return nil
	}
	return &agentproto.HeldImages{Refs: append([]string{}, p.held...)}
}

// sent records that a report carried h.
func (p *prepullState) sent(h *agentproto.HeldImages) {
	if h == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Equal(p.held, h.Refs) {
		p.unsent = false
	}
}

func (p *prepullState) setHeld(held []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if held == nil {
		held = []string{}
	}
	if !slices.Equal(p.held, held) || p.held == nil {
		p.held, p.unsent = held, true
	}
}

// prepullLoop pulls the images the desired state lists to pre-pull, one at
// a time, whenever the list changes and every prepullRetry, and records
// which the host holds for the reports. A runtime that cannot pre-pull
// (the process runtime) makes it idle.
func (a *Agent) prepullLoop(ctx context.Context) error {
	pp, ok := a.cfg.Runtime.(runtime.Prepuller)
	if !ok {
		return nil
	}
	t := time.NewTicker(prepullRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.prepull.kick:
		case <-t.C:
		}
		a.prepull.mu.Lock()
		want := slices.Clone(a.prepull.want)
		a.prepull.mu.Unlock()
		var held []string
		for _, ref := range want {
			if ctx.Err() != nil {
				return nil
			}
			has, err := pp.HasImage(ctx, ref)
			if err != nil {
				a.log.Warn("agent: cannot look up an image to pre-pull", "image", ref, "err", err)
				continue
			}
			if !has {
				// The agent pulls as root: the image passes the policy
				// whatever the control plane says, as a run's does.
				if err := a.images().Check(ref); err != nil {
					a.log.Warn("agent: image to pre-pull refused", "image", ref, "err", err)
					continue
				}
				a.log.Info("agent: pre-pulling image", "image", ref)
				if err := pp.PullImage(ctx, ref); err != nil {
					if ctx.Err() == nil {
						a.log.Warn("agent: pre-pull failed; tried again later", "image", ref, "err", err)
					}
					continue
				}
			}
			held = append(held, ref)
		}
		a.prepull.setHeld(held)
	}
}
