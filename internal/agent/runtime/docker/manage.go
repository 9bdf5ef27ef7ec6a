package docker

import (
	"context"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// List returns every container gpurent manages on the host, found by label,
// sorted by instance id.
func (r *Runtime) List(ctx context.Context) ([]runtime.Status, error) {
	filters := make(client.Filters).Add("label", runtime.LabelManaged+"=true")
	if r.cfg.Scope != "" {
		filters.Add("label", LabelScope+"="+r.cfg.Scope)
	}
	res, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
	if err != nil {
		return nil, wrap(err, "list containers")
	}
	out := make([]runtime.Status, 0, len(res.Items))
	running := map[string]int{}
	for _, item := range res.Items {
		// The list lacks the environment and start time: inspect each.
		c, found, err := r.inspect(ctx, item.ID)
		if err != nil {
			return nil, err
		}
		if !found || c.Config.Labels[runtime.LabelInstance] == "" || !r.inScope(c) {
			continue // removed meanwhile, or not one of ours after all
		}
		if r.pasta != nil && c.State.Status == container.StateRunning {
			// Adopt a running instance's network, or make it again for
			// one the daemon restarted (a new namespace).
			if err := r.pasta.ensure(ctx, c); err != nil {
				r.log.Error("docker: instance network", "instance", c.Config.Labels[runtime.LabelInstance], "err", err)
			}
			running[c.ID] = c.State.Pid
		}
		if c.Name != "/"+r.name(c.Config.Labels[runtime.LabelInstance]) {
			continue // the other side of a carry in progress (-next, -prev)
		}
		out = append(out, r.withStartup(c, statusOf(c)))
	}
	if r.pasta != nil {
		r.pasta.sweep(running, nil)
	}
	slices.SortFunc(out, func(a, b runtime.Status) int { return strings.Compare(a.InstanceID, b.InstanceID) })
	return out, nil
}

// Stop stops the instance gracefully (SIGTERM, then SIGKILL after the stop
// timeout), keeping its container and volume. A missing or stopped
// container is already done.
func (r *Runtime) Stop(ctx context.Context, instanceID string) error {
	if !validName(instanceID) {
		return gpurent.Errorf(gpurent.CodeInvalid, "instance id %q is not usable as a container name", instanceID)
	}
	unlock, err := r.lockInstance(ctx, instanceID)
	if err != nil {
		return err
	}
	defer unlock()
	name := r.name(instanceID)
	c, found, err := r.inspect(ctx, name)
	if err != nil || !found {
		return err
	}
	if err := checkOwned(c, instanceID); err != nil {
		return err
	}
	if !r.inScope(c) {
		return nil // the instance runs under another scope now
	}
	return r.stopContainer(ctx, c.ID, instanceID)
}

func (r *Runtime) stopContainer(ctx context.Context, id, instanceID string) error {
	timeout := int(r.cfg.StopTimeout.Seconds())
	_, err := r.cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &timeout})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return wrap(err, "stop the container of instance %s", instanceID)
	}
	r.log.Info("container stopped", "instance", instanceID)
	r.sweepNet(ctx)
	return nil
}

// Remove stops and deletes the instance's container and, if removeVolume,
// its data volume. volumeName "" means the volume named on the container.
// What is already gone is done; a volume that does not belong to the
// instance is never removed.
func (r *Runtime) Remove(ctx context.Context, instanceID string, volumeName string, removeVolume bool) error {
	if !validName(instanceID) {
		return gpurent.Errorf(gpurent.CodeInvalid, "instance id %q is not usable as a container name", instanceID)
	}
	unlock, err := r.lockInstance(ctx, instanceID)
	if err != nil {
		return err
	}
	defer unlock()
	volumeName = r.volumeName(volumeName)
	name := r.name(instanceID)
	c, found, err := r.inspect(ctx, name)
	if err != nil {
		return err
	}
	if found {
		if err := checkOwned(c, instanceID); err != nil {
			return err
		}
		if !r.inScope(c) {
			// The instance moved to another scope, which uses the
			// volume: neither is ours to remove.
			return nil
		}
		if volumeName == "" {
			volumeName = c.Config.Labels[runtime.LabelVolume]
		}
		if err := r.removeContainer(ctx, c.ID); err != nil {
			return err
		}
	}
	// Leftovers of an interrupted carry to new GPUs go too.
	for _, extra := range []string{name + suffixNext, name + suffixPrev} {
		c, found, err := r.inspect(ctx, extra)
		if err != nil {
			return err
		}
		if found && checkOwned(c, instanceID) == nil && r.inScope(c) {
			if err := r.removeContainer(ctx, c.ID); err != nil {
				return err
			}
		}
	}
	if !removeVolume || volumeName == "" {
		return nil
	}
	return r.removeVolume(ctx, instanceID, volumeName)
}

// removeContainer stops a container gracefully, then deletes it with its
// anonymous volumes (named volumes are never deleted this way).
func (r *Runtime) removeContainer(ctx context.Context, nameOrID string) error {
	if err := r.stopContainer(ctx, nameOrID, nameOrID); err != nil {
		return err
	}
	_, err := r.cli.ContainerRemove(ctx, nameOrID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil:
		r.log.Info("container removed", "container", nameOrID)
		return nil
	case cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsConflict(err):
		// "removal already in progress": the daemon finishes it.
		return nil
	default:
		return wrap(err, "remove container %s", nameOrID)
	}
}

func (r *Runtime) removeVolume(ctx context.Context, instanceID, volumeName string) error {
	if !validName(volumeName) {
		return gpurent.Errorf(gpurent.CodeInvalid, "volume name %q is not a Docker volume name", volumeName)
	}
	res, err := r.cli.VolumeInspect(ctx, volumeName, client.VolumeInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return wrap(err, "look up volume %s", volumeName)
	}
	if err := checkVolumeOwned(res.Volume.Labels, volumeName, instanceID); err != nil {
		return err
	}
	_, err = r.cli.VolumeRemove(ctx, volumeName, client.VolumeRemoveOptions{})
	if err != nil && !cerrdefs.IsNotFound(err) {
		// In use by a container: a conflict, which wrap keeps.
		return wrap(err, "remove volume %s", volumeName)
	}
	if res.Volume.Labels[labelVolumeQuota] == "loop" {
		if err := r.releaseQuota(ctx, volumeName); err != nil {
			return err
		}
	}
	r.log.Info("volume removed", "instance", instanceID, "volume", volumeName)
	return nil
}
