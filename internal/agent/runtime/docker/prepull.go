package docker

import (
	"context"
	"fmt"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
)

// HasImage reports whether ref is on the host (runtime.Prepuller).
func (r *Runtime) HasImage(ctx context.Context, ref string) (bool, error) {
	_, err := r.cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	default:
		return false, wrap(err, "look up image %s", ref)
	}
}

// PullImage pulls ref ahead of any instance, with the pull credential of
// its registry and under the host's image size limit (runtime.Prepuller).
func (r *Runtime) PullImage(ctx context.Context, ref string) error {
	if err := r.pull(ctx, ref); err != nil {
		return wrap(err, "pre-pull image %s", ref)
	}
	return nil
}

// pullLog keeps the progress of the pulls in progress, by reference.
type pullLog struct {
	mu sync.Mutex
	m  map[string]*pullProgress
}

// pullProgress is one pull's layers: bytes downloaded and announced.
type pullProgress struct {
	done, total map[string]int64
	extracting  bool
}

func (l *pullLog) start(ref string) (done func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*pullProgress{}
	}
	p := &pullProgress{done: map[string]int64{}, total: map[string]int64{}}
	l.m[ref] = p
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.m[ref] == p {
			delete(l.m, ref)
		}
	}
}

func (l *pullLog) layer(ref, id, status string, current, total int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.m[ref]
	if p == nil {
		return
	}
	switch status {
	case "Downloading":
		p.done[id], p.total[id] = current, max(total, p.total[id])
	case "Extracting":
		p.extracting = true
		p.done[id] = p.total[id]
	}
}

// PullProgress describes the pull of ref in progress (runtime.PullReporter):
// "pulling image REF: 120.0 MiB of 480.0 MiB (25%)".
func (r *Runtime) PullProgress(ref string) (string, bool) {
	r.pulls.mu.Lock()
	defer r.pulls.mu.Unlock()
	p := r.pulls.m[ref]
	if p == nil {
		return "", false
	}
	var done, total int64
	for id, t := range p.total {
		total += t
		done += min(p.done[id], t)
	}
	switch {
	case total <= 0:
		return fmt.Sprintf("pulling image %s: starting", ref), true
	case p.extracting && done >= total:
		return fmt.Sprintf("pulling image %s: unpacking %s", ref, sizeText(total)), true
	default:
		return fmt.Sprintf("pulling image %s: %s of %s (%d%%)", ref, sizeText(done), sizeText(total), done*100/total), true
	}
}
