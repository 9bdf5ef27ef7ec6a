package docker

import (
	"context"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// Names of the containers of an instance while its writable layer is
// carried to a container of a new allocation: the new one is created as
// <name>-next and the old one is set aside as <name>-prev before the new
// one takes the instance's name. List shows neither.
const (
	suffixNext = "-next"
	suffixPrev = "-prev"
)

// TreeCopier makes dst (an existing directory) equal to src: every file
// type, mode, owner, time and extended attribute (overlay whiteouts and
// opaque markers included), deleting what src lacks. A live pass (final
// false) runs while src may change and only has to bring dst close, so
// that the final pass, with src stopped, has little left to do.
type TreeCopier func(ctx context.Context, src, dst string, final bool) error

// upperDir is where the container's writable layer lives on the host.
func upperDir(c container.InspectResponse) (string, error) {
	if c.GraphDriver == nil || c.GraphDriver.Name != "overlay2" || c.GraphDriver.Data["UpperDir"] == "" {
		name := "unknown"
		if c.GraphDriver != nil {
			name = c.GraphDriver.Name
		}
		return "", gpurent.Errorf(gpurent.CodeUnavailable,
			"carrying an instance's file system to new GPUs needs Docker's overlay2 storage driver, this daemon uses %s", name)
	}
	return c.GraphDriver.Data["UpperDir"], nil
}

// recoverCarry finishes or undoes a carry a crash interrupted, so the
// instance's name is on exactly one container again: a -next beside the
// named container is an unfinished copy (removed: the old container is
// intact); a -next without the named container was fully copied (it takes
// the name); a -prev beside the named container is the old one, done with.
func (r *Runtime) recoverCarry(ctx context.Context, instanceID string) error {
	name := r.name(instanceID)
	_, haveMain, err := r.inspect(ctx, name)
	if err != nil {
		return err
	}
	next, haveNext, err := r.inspect(ctx, name+suffixNext)
	if err != nil {
		return err
	}
	if haveNext && checkOwned(next, instanceID) == nil {
		if haveMain {
			r.log.Warn("removing an unfinished copy of an instance's file system", "instance", instanceID)
			if err := r.removeContainer(ctx, next.ID); err != nil {
				return err
			}
		} else {
			r.log.Warn("finishing an interrupted move to new GPUs", "instance", instanceID)
			if _, err := r.cli.ContainerRename(ctx, next.ID, client.ContainerRenameOptions{NewName: name}); err != nil {
				return wrap(err, "rename the new container of instance %s", instanceID)
			}
			haveMain = true
		}
	}
	prev, havePrev, err := r.inspect(ctx, name+suffixPrev)
	if err != nil {
		return err
	}
	if havePrev && haveMain && checkOwned(prev, instanceID) == nil {
		return r.removeContainer(ctx, prev.ID)
	}
	if havePrev && !haveMain && checkOwned(prev, instanceID) == nil {
		// Set aside but no successor: give the old one its name back.
		if _, err := r.cli.ContainerRename(ctx, prev.ID, client.ContainerRenameOptions{NewName: name}); err != nil {
			return wrap(err, "rename the old container of instance %s back", instanceID)
		}
	}
	return nil
}

// replaceCarrying replaces old (the instance's container of another
// allocation, in this scope) by a container for spec that starts with
// old's writable layer: create <name>-next, copy old's layer into it while
// old still runs (a live pass), stop old, copy what changed since (the
// final pass: the downtime holds only that), set old aside as <name>-prev,
// give the new one the name, start it, remove old. A failed copy removes the
// new container and leaves old as it was (stopped if the failure came
// after the stop); every step is safe to repeat (recoverCarry).
func (r *Runtime) replaceCarrying(ctx context.Context, old container.InspectResponse, spec runtime.Spec, img imageCommand) (runtime.Status, error) {
	name := r.name(spec.InstanceID)
	from, err := upperDir(old)
	if err != nil {
		return runtime.Status{}, err
	}
	cfg, host := r.containerConfig(spec, img)
	created, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name + suffixNext, Config: cfg, HostConfig: host})
	if err != nil {
		return runtime.Status{}, wrap(err, "create the new container of instance %s", spec.InstanceID)
	}
	undo := func(cause error) (runtime.Status, error) {
		if err := r.removeContainer(ctx, created.ID); err != nil {
			r.log.Error("removing the new container after a failed carry", "instance", spec.InstanceID, "err", err)
		}
		return runtime.Status{}, cause
	}
	next, found, err := r.inspect(ctx, created.ID)
	if err != nil || !found {
		return undo(gpurent.Errorf(gpurent.CodeUnavailable, "the new container of instance %s vanished", spec.InstanceID))
	}
	to, err := upperDir(next)
	if err != nil {
		return undo(err)
	}
	if old.State != nil && old.State.Running {
		// A failed live pass only means the final one has more to do.
		if err := r.cfg.CarryLayer(ctx, from, to, false); err != nil && ctx.Err() == nil {
			r.log.Warn("live copy of a running instance's file system failed; the final pass copies all", "instance", spec.InstanceID, "err", err)
		}
	}
	if err := r.stopContainer(ctx, old.ID, spec.InstanceID); err != nil {
		return undo(err)
	}
	if stopped, found, err := r.inspect(ctx, old.ID); err == nil && found {
		if t, err := time.Parse(time.RFC3339Nano, stopped.State.FinishedAt); err == nil && t.Year() > 1 {
			r.stops.record(old.Config.Labels[runtime.LabelAllocation], t)
		}
	}
	if err := r.cfg.CarryLayer(ctx, from, to, true); err != nil {
		return undo(gpurent.WrapError(gpurent.CodeUnavailable, err, "copy the file system of instance %s to its new container", spec.InstanceID))
	}
	if _, err := r.cli.ContainerRename(ctx, old.ID, client.ContainerRenameOptions{NewName: name + suffixPrev}); err != nil {
		return undo(wrap(err, "set the old container of instance %s aside", spec.InstanceID))
	}
	if _, err := r.cli.ContainerRename(ctx, created.ID, client.ContainerRenameOptions{NewName: name}); err != nil {
		// recoverCarry finishes this on the next Run.
		return runtime.Status{}, wrap(err, "name the new container of instance %s", spec.InstanceID)
	}
	// Start first, remove the old container (and its layer) after: the
	// removal takes a while and is not downtime. recoverCarry removes a
	// -prev left behind by a crash here.
	_, startErr := r.cli.ContainerStart(ctx, name, client.ContainerStartOptions{})
	r.removeReplaced(ctx, old.ID, spec.InstanceID)
	if startErr != nil {
		return runtime.Status{}, wrap(startErr, "start the container of instance %s", spec.InstanceID)
	}
	r.log.Info("container replaced with its file system carried over", "instance", spec.InstanceID,
		"old_allocation", old.Config.Labels[runtime.LabelAllocation], "allocation", spec.AllocationID)
	return r.status(ctx, name)
}

// removeTries bounds the attempts to remove a replaced container: the
// daemon can fail one transiently (an overlay mount still busy), and a
// -prev left behind holds the old layer's disk until the instance is next
// run, moved or removed.
const removeTries = 3

// removeReplaced removes the container a carry replaced, trying again a
// moment later when the daemon fails it.
func (r *Runtime) removeReplaced(ctx context.Context, id, instanceID string) {
	for try := 1; ; try++ {
		err := r.removeContainer(ctx, id)
		if err == nil || cerrdefs.IsNotFound(err) {
			return
		}
		if try == removeTries || ctx.Err() != nil {
			r.log.Warn("removing the old container after a carry; it goes when the instance is next run, moved or removed",
				"instance", instanceID, "tries", try, "err", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(try) * time.Second):
		}
	}
}
