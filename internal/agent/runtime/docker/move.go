package docker

import (
	"context"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// The Docker runtime moves instances between hosts: the source agent copies
// the Trees of the running (then stopped) container into the Trees of a
// container that Prepare created, unstarted, on the target host; Run then
// starts that container as it is.
var _ runtime.Mover = (*Runtime)(nil)

// Trees returns the host directories of the instance's container: its
// writable layer (overlay2's upper directory) and the mount point of the
// data volume mounted at runtime.DataPath. The container may be in any
// state. An instance without a container in this runtime's scope is
// not_found; a daemon on another storage driver than overlay2 is
// unavailable.
func (r *Runtime) Trees(ctx context.Context, instanceID string) (runtime.Trees, error) {
	if !validName(instanceID) {
		return runtime.Trees{}, gpurent.Errorf(gpurent.CodeInvalid, "instance id %q is not usable as a container name", instanceID)
	}
	unlock, err := r.lockInstance(ctx, instanceID)
	if err != nil {
		return runtime.Trees{}, err
	}
	defer unlock()
	if err := r.recoverCarry(ctx, instanceID); err != nil {
		return runtime.Trees{}, err
	}
	c, found, err := r.inspect(ctx, r.name(instanceID))
	if err != nil {
		return runtime.Trees{}, err
	}
	if !found || !r.inScope(c) {
		return runtime.Trees{}, gpurent.Errorf(gpurent.CodeNotFound, "instance %s has no container on this host", instanceID)
	}
	if err := checkOwned(c, instanceID); err != nil {
		return runtime.Trees{}, err
	}
	return r.treesOf(ctx, c)
}

// Prepare makes the data volume and an unstarted container for spec exist,
// and returns their trees for a move to copy into. It is idempotent: the
// container of spec's allocation is kept with what was copied into it, and
// one that already runs (the move switched to it) is left running and its
// trees returned. A stopped container of another allocation (or another
// scope) is removed first, keeping the volume. A running container of
// another allocation is a conflict: preparing a move onto a host never
// kills the instance that runs there; stop it first.
func (r *Runtime) Prepare(ctx context.Context, spec runtime.Spec) (runtime.Trees, error) {
	if err := validateSpec(spec); err != nil {
		return runtime.Trees{}, err
	}
	spec.VolumeName = r.volumeName(spec.VolumeName)
	name := r.name(spec.InstanceID)
	var trees runtime.Trees
	err := r.rounds(ctx, spec.InstanceID, func(c container.InspectResponse, found bool) (next, error) {
		var err error
		if !found {
			id, taken, err := r.create(ctx, spec, name)
			if err != nil || taken {
				return roundWait, err
			}
			c, found, err := r.inspect(ctx, id)
			if err != nil || !found {
				return roundWait, err // !found: removed by another process meanwhile
			}
			trees, err = r.treesOf(ctx, c)
			return roundDone, err
		}
		ours := c.Config.Labels[runtime.LabelAllocation] == spec.AllocationID && r.inScope(c)
		switch c.State.Status {
		case container.StateDead, container.StateRemoving:
			return roundWait, r.removeContainer(ctx, c.ID)
		case container.StateRunning, container.StateRestarting, container.StatePaused:
			if !ours {
				return roundDone, gpurent.Errorf(gpurent.CodeConflict,
					"instance %s runs on this host under allocation %s; it must stop before allocation %s can be prepared here",
					spec.InstanceID, c.Config.Labels[runtime.LabelAllocation], spec.AllocationID)
			}
			trees, err = r.preparedTrees(ctx, c, spec)
			return roundDone, err
		default: // created, exited
			if ours {
				trees, err = r.preparedTrees(ctx, c, spec)
				return roundDone, err
			}
		}
		// A stopped container of another allocation: check the image and
		// volume before removing it, so a bad spec loses nothing.
		if _, err := r.prepare(ctx, spec); err != nil {
			return roundDone, err
		}
		r.log.Info("removing a stopped container of another allocation to prepare a move", "instance", spec.InstanceID,
			"old_allocation", c.Config.Labels[runtime.LabelAllocation], "allocation", spec.AllocationID,
			"old_scope", c.Config.Labels[LabelScope])
		return roundAgain, r.removeContainer(ctx, c.ID)
	})
	return trees, err
}

// preparedTrees returns the trees of the container of spec's allocation
// that exists already, after checking that it mounts spec's volume: a
// container of the same allocation on another volume means the caller's
// picture is wrong, and copying into it would put data where it does not
// belong.
func (r *Runtime) preparedTrees(ctx context.Context, c container.InspectResponse, spec runtime.Spec) (runtime.Trees, error) {
	if v := volumeOf(c); v != spec.VolumeName {
		return runtime.Trees{}, gpurent.Errorf(gpurent.CodeConflict,
			"instance %s: the container of allocation %s mounts volume %q, not %q",
			spec.InstanceID, spec.AllocationID, v, spec.VolumeName)
	}
	return r.treesOf(ctx, c)
}

// treesOf finds a container's writable layer and the mount point of its
// data volume on the host.
func (r *Runtime) treesOf(ctx context.Context, c container.InspectResponse) (runtime.Trees, error) {
	instanceID := c.Config.Labels[runtime.LabelInstance]
	layer, err := upperDir(c)
	if err != nil {
		return runtime.Trees{}, err
	}
	vol := volumeOf(c)
	if !validName(vol) {
		return runtime.Trees{}, gpurent.Errorf(gpurent.CodeConflict,
			"the container of instance %s has no data volume at %s", instanceID, runtime.DataPath)
	}
	res, err := r.cli.VolumeInspect(ctx, vol, client.VolumeInspectOptions{})
	if err != nil {
		return runtime.Trees{}, wrap(err, "look up volume %s of instance %s", vol, instanceID)
	}
	if err := checkVolumeOwned(res.Volume.Labels, vol, instanceID); err != nil {
		return runtime.Trees{}, err
	}
	if res.Volume.Mountpoint == "" {
		return runtime.Trees{}, gpurent.Errorf(gpurent.CodeUnavailable,
			"volume %s of instance %s has no directory on the host (driver %s)", vol, instanceID, res.Volume.Driver)
	}
	return runtime.Trees{Volume: res.Volume.Mountpoint, Layer: layer}, nil
}

// volumeOf names the volume a container mounts at runtime.DataPath, or, for
// a daemon that reports no mounts, the one its label names.
func volumeOf(c container.InspectResponse) string {
	for _, m := range c.Mounts {
		if m.Destination == runtime.DataPath {
			if m.Type != mount.TypeVolume {
				return ""
			}
			return m.Name
		}
	}
	if c.Config == nil {
		return ""
	}
	return c.Config.Labels[runtime.LabelVolume]
}
