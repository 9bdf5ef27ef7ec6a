package docker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// Run makes the instance run per spec: it creates the container if missing,
// replaces one of another allocation (keeping the volume), starts a stopped
// one and leaves a running one alone. The image and volume are checked
// before an old container is removed, so a bad spec never kills a running
// instance.
func (r *Runtime) Run(ctx context.Context, spec runtime.Spec) (runtime.Status, error) {
	if err := validateSpec(spec); err != nil {
		return runtime.Status{}, err
	}
	spec.VolumeName = r.volumeName(spec.VolumeName)
	name := r.name(spec.InstanceID)
	var st runtime.Status
	err := r.rounds(ctx, spec.InstanceID, func(c container.InspectResponse, found bool) (next, error) {
		if !found {
			_, taken, err := r.create(ctx, spec, name)
			if err != nil || taken {
				return roundWait, err
			}
			if _, err := r.cli.ContainerStart(ctx, name, client.ContainerStartOptions{}); err != nil {
				return roundDone, wrap(err, "start the container of instance %s", spec.InstanceID)
			}
			st, err = r.status(ctx, name)
			return roundDone, err
		}
		if c.Config.Labels[runtime.LabelAllocation] == spec.AllocationID && r.inScope(c) {
			done, err := r.resume(ctx, c)
			if err != nil || !done {
				return roundWait, err
			}
			st, err = r.status(ctx, name)
			return roundDone, err
		}
		img, err := r.prepare(ctx, spec)
		if err != nil {
			return roundDone, err
		}
		if r.cfg.CarryLayer != nil && r.inScope(c) {
			st, err = r.replaceCarrying(ctx, c, spec, img)
			return roundDone, err
		}
		r.log.Info("replacing container of another allocation", "instance", spec.InstanceID,
			"old_allocation", c.Config.Labels[runtime.LabelAllocation], "allocation", spec.AllocationID,
			"old_scope", c.Config.Labels[LabelScope])
		return roundAgain, r.removeContainer(ctx, name)
	})
	if err == nil && st.State == runtime.Running {
		err = r.ensureNet(ctx, name)
	}
	return st, err
}

// ensureNet gives the running container its own network in the pasta mode
// (pasta.go); in the other modes the daemon did.
func (r *Runtime) ensureNet(ctx context.Context, nameOrID string) error {
	if r.pasta == nil {
		return nil
	}
	c, found, err := r.inspect(ctx, nameOrID)
	if err != nil || !found {
		return err
	}
	return r.pasta.ensure(ctx, c)
}

// SweepNetworks tears down the NAT of every container that no longer runs
// (removed behind the agent's back, say); List does it too.
func (r *Runtime) SweepNetworks(ctx context.Context) { r.sweepNet(ctx) }

// sweepNet tears down the networks of containers that no longer run.
func (r *Runtime) sweepNet(ctx context.Context) {
	if r.pasta == nil {
		return
	}
	r.pasta.sweep(nil, func(id string) int {
		c, found, err := r.inspect(ctx, id)
		switch {
		case err != nil:
			return pidUnknown
		case !found || c.State.Status != container.StateRunning:
			return 0
		}
		return c.State.Pid
	})
}

// next is what a round of rounds asks for.
type next int

const (
	roundDone  next = iota // finished (or failed)
	roundAgain             // an obstacle was cleared: look again at once
	roundWait              // look again after a growing pause
)

// rounds runs step under the instance's lock, after recoverCarry, once per
// look at the instance's container (found false: there is none; found true:
// it is gpurent's, for this instance): each round either finishes or clears
// one obstacle (an old container, a dead one, one another process is
// creating — the daemon reserves the name a moment before the container
// can be inspected).
func (r *Runtime) rounds(ctx context.Context, instanceID string, step func(c container.InspectResponse, found bool) (next, error)) error {
	unlock, err := r.lockInstance(ctx, instanceID)
	if err != nil {
		return err
	}
	defer unlock()
	if err := r.recoverCarry(ctx, instanceID); err != nil {
		return err
	}
	name := r.name(instanceID)
	wait := false
	for round := range maxRounds {
		if wait {
			if err := sleep(ctx, time.Duration(round)*20*time.Millisecond); err != nil {
				return err
			}
		}
		c, found, err := r.inspect(ctx, name)
		if err != nil {
			return err
		}
		if found {
			if err := checkOwned(c, instanceID); err != nil {
				return err
			}
		}
		n, err := step(c, found)
		if err != nil || n == roundDone {
			return err
		}
		wait = n == roundWait
	}
	return gpurent.Errorf(gpurent.CodeConflict, "instance %s: its container keeps changing under us; try again", instanceID)
}

// create checks the image and the volume, then creates the instance's
// container for spec under name, not started. taken: another process is
// creating that name (look again).
func (r *Runtime) create(ctx context.Context, spec runtime.Spec, name string) (id string, taken bool, err error) {
	img, err := r.prepare(ctx, spec)
	if err != nil {
		return "", false, err
	}
	cfg, host := r.containerConfig(spec, img)
	created, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name, Config: cfg, HostConfig: host})
	if cerrdefs.IsConflict(err) {
		return "", true, nil
	}
	if err != nil {
		return "", false, wrap(err, "create the container of instance %s", spec.InstanceID)
	}
	r.log.Info("container created", "instance", spec.InstanceID, "allocation", spec.AllocationID,
		"image", spec.Image, "gpus", len(spec.GPUUUIDs))
	for _, w := range created.Warnings {
		// e.g. a kernel without swap accounting ignores MemorySwap.
		r.log.Warn("docker warning on create", "instance", spec.InstanceID, "warning", w)
	}
	return created.ID, false, nil
}

// maxRounds bounds Run's attempts; with its growing waits a container that
// keeps changing for about 4 s makes Run give up.
const maxRounds = 20

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return gpurent.WrapError(gpurent.CodeUnavailable, ctx.Err(), "gave up waiting for the container")
	}
}

// resume brings an existing container of the right allocation to running.
// done is false when the container was removed and must be created anew.
func (r *Runtime) resume(ctx context.Context, c container.InspectResponse) (done bool, err error) {
	instanceID := c.Config.Labels[runtime.LabelInstance]
	switch c.State.Status {
	case container.StateRunning, container.StateRestarting:
		return true, nil // never restart a running container
	case container.StatePaused:
		if _, err := r.cli.ContainerUnpause(ctx, c.ID, client.ContainerUnpauseOptions{}); err != nil {
			return false, wrap(err, "unpause the container of instance %s", instanceID)
		}
		return true, nil
	case container.StateDead, container.StateRemoving:
		if err := r.removeContainer(ctx, c.ID); err != nil {
			return false, err
		}
		return false, nil
	default: // created, exited
		if _, err := r.cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
			return false, wrap(err, "start the container of instance %s", instanceID)
		}
		r.log.Info("container started", "instance", instanceID)
		return true, nil
	}
}

// prepare makes sure the image and the data volume are there, and
// returns the image's own command.
func (r *Runtime) prepare(ctx context.Context, spec runtime.Spec) (imageCommand, error) {
	img, err := r.ensureImage(ctx, spec.Image)
	if err != nil {
		return imageCommand{}, err
	}
	return img, r.ensureVolume(ctx, spec)
}

// imageCommand is what an image runs by default: its entrypoint and
// command, which the instance's init starts unless the spec says
// otherwise.
type imageCommand struct {
	Entrypoint, Cmd []string
}

// ensureImage finds the image on the host, pulling it when allowed, and
// returns its command.
func (r *Runtime) ensureImage(ctx context.Context, ref string) (imageCommand, error) {
	if err := r.findImage(ctx, ref); err != nil {
		return imageCommand{}, err
	}
	res, err := r.cli.ImageInspect(ctx, ref)
	if err != nil {
		return imageCommand{}, wrap(err, "look up image %s", ref)
	}
	if res.Config == nil {
		return imageCommand{}, nil
	}
	return imageCommand{Entrypoint: res.Config.Entrypoint, Cmd: res.Config.Cmd}, nil
}

// findImage finds the image on the host, pulling it when allowed.
func (r *Runtime) findImage(ctx context.Context, ref string) error {
	_, err := r.cli.ImageInspect(ctx, ref)
	if err == nil {
		return nil
	}
	if !cerrdefs.IsNotFound(err) {
		return wrap(err, "look up image %s", ref)
	}
	if r.cfg.NoPull {
		return gpurent.WrapError(gpurent.CodeNotFound, err,
			"image %s is not present on this host, and this host does not pull images: choose an image the operator has put on its hosts (or ask the operator to pre-pull it)", ref)
	}
	r.log.Info("pulling image", "image", ref)
	if err := r.pull(ctx, ref); err != nil {
		var tooLarge *imageTooLarge
		if errors.As(err, &tooLarge) {
			return gpurent.WrapError(gpurent.CodeInvalid, err, "%s", err.Error())
		}
		return gpurent.WrapError(gpurent.CodeNotFound, err,
			"image %s is not present on this host, and pulling it failed: %s; check the image's name and tag, or ask the operator whether its registry is reachable", ref, firstLine(err.Error()))
	}
	r.log.Info("image pulled", "image", ref)
	return nil
}

// ensureVolume creates the instance's data volume, or checks that the one of
// that name belongs to this instance: a volume of another instance, or one
// gpurent does not manage, is never mounted into a tenant's container.
func (r *Runtime) ensureVolume(ctx context.Context, spec runtime.Spec) error {
	res, err := r.cli.VolumeInspect(ctx, spec.VolumeName, client.VolumeInspectOptions{})
	switch {
	case err == nil:
		if err := checkVolumeOwned(res.Volume.Labels, spec.VolumeName, spec.InstanceID); err != nil {
			return err
		}
		if res.Volume.Labels[labelVolumeQuota] == "loop" {
			// After a reboot the file system must be mounted again
			// before the bind can find it.
			gib, _ := strconv.ParseInt(res.Volume.Labels[labelVolumeGiB], 10, 64)
			_, err := r.ensureQuotaMount(ctx, spec.VolumeName, gib)
			return err
		}
		return nil
	case !cerrdefs.IsNotFound(err):
		return wrap(err, "look up volume %s", spec.VolumeName)
	}
	opts := client.VolumeCreateOptions{
		Name:   spec.VolumeName,
		Driver: r.cfg.VolumeDriver,
		Labels: volumeLabels(spec),
	}
	switch {
	case r.cfg.VolumeQuotaDir != "" && spec.VolumeGiB > 0:
		mnt, err := r.ensureQuotaMount(ctx, spec.VolumeName, int64(spec.VolumeGiB))
		if err != nil {
			return err
		}
		opts.Driver = "local"
		opts.DriverOpts = map[string]string{"type": "none", "o": "bind", "device": mnt}
		opts.Labels[labelVolumeQuota] = "loop"
		opts.Labels[labelVolumeGiB] = strconv.Itoa(spec.VolumeGiB)
	case r.cfg.VolumeSizeOption != "" && spec.VolumeGiB > 0:
		opts.DriverOpts = map[string]string{r.cfg.VolumeSizeOption: fmt.Sprintf("%dG", spec.VolumeGiB)}
	}
	created, err := r.cli.VolumeCreate(ctx, opts)
	if err != nil {
		return wrap(err, "create volume %s", spec.VolumeName)
	}
	// Creating a name that exists returns the existing volume: check it
	// again in case another creator won a race.
	if err := checkVolumeOwned(created.Volume.Labels, spec.VolumeName, spec.InstanceID); err != nil {
		return err
	}
	r.log.Info("volume created", "instance", spec.InstanceID, "volume", spec.VolumeName)
	return nil
}

// Labels of a data volume backed by a size-limited file system (quota.go).
const (
	labelVolumeQuota = "io.gpurent.volume.quota" // "loop"
	labelVolumeGiB   = "io.gpurent.volume.gib"
)

func checkVolumeOwned(labels map[string]string, volume, instanceID string) error {
	if labels[runtime.LabelManaged] != "true" || labels[runtime.LabelInstance] != instanceID {
		return gpurent.Errorf(gpurent.CodeConflict,
			"volume %s exists on the host but does not belong to instance %s", volume, instanceID)
	}
	return nil
}

func checkOwned(c container.InspectResponse, instanceID string) error {
	if c.Config == nil || c.Config.Labels[runtime.LabelManaged] != "true" ||
		c.Config.Labels[runtime.LabelInstance] != instanceID {
		return gpurent.Errorf(gpurent.CodeConflict,
			"a container named %s exists on the host but is not managed by gpurent for instance %s",
			strings.TrimPrefix(c.Name, "/"), instanceID)
	}
	return nil
}

// inScope reports whether a managed container belongs to this runtime's
// scope; without a scope every managed container does.
func (r *Runtime) inScope(c container.InspectResponse) bool {
	return r.cfg.Scope == "" || c.Config.Labels[LabelScope] == r.cfg.Scope
}

// inspect looks a container up by name or id; found is false when absent.
func (r *Runtime) inspect(ctx context.Context, nameOrID string) (c container.InspectResponse, found bool, err error) {
	res, err := r.cli.ContainerInspect(ctx, nameOrID, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return container.InspectResponse{}, false, nil
	}
	if err != nil {
		return container.InspectResponse{}, false, wrap(err, "inspect container %s", nameOrID)
	}
	if res.Container.State == nil || res.Container.Config == nil {
		return container.InspectResponse{}, false, gpurent.Errorf(gpurent.CodeInternal,
			"container %s: the daemon answered without state or config", nameOrID)
	}
	return res.Container, true, nil
}

// status reads one container back as a Status.
func (r *Runtime) status(ctx context.Context, name string) (runtime.Status, error) {
	c, found, err := r.inspect(ctx, name)
	if err != nil {
		return runtime.Status{}, err
	}
	if !found {
		return runtime.Status{}, gpurent.Errorf(gpurent.CodeConflict, "container %s vanished while starting", name)
	}
	return r.withStartup(c, statusOf(c)), nil
}

// statusOf maps a container to a Status. Its PID 1 is gpurent's init,
// which stays up whatever the startup command does and ends (exit 0) only
// when a stop asks it to: under the unless-stopped restart policy an
// exited container was stopped on purpose, so it is Stopped whatever its
// exit code, unless the out-of-memory killer ended the init (the instance
// as a whole used all its memory). One the daemon keeps restarting has an
// init that keeps dying: a platform failure.
func statusOf(c container.InspectResponse) runtime.Status {
	st := runtime.Status{
		InstanceID:   c.Config.Labels[runtime.LabelInstance],
		AllocationID: c.Config.Labels[runtime.LabelAllocation],
		GPUUUIDs:     gpusFromEnv(c.Config.Env),
	}
	if t, err := time.Parse(time.RFC3339Nano, c.State.StartedAt); err == nil && t.Year() > 1 {
		st.StartedAt = t.UTC()
	}
	switch c.State.Status {
	case container.StateRunning:
		st.State = runtime.Running
		if c.RestartCount > 0 {
			st.Message = fmt.Sprintf("restarted %d times by the daemon", c.RestartCount)
		}
	case container.StatePaused:
		st.State = runtime.Stopped
		st.Message = "paused"
	case container.StateRestarting:
		st.State = runtime.Failed
		st.Message = initDied
		if c.State.OOMKilled {
			st.Message = outOfMemory(c)
		} else if d := describeExit(c.State); d != "" {
			st.Message += " (" + d + ")"
		}
	case container.StateDead:
		st.State = runtime.Failed
		st.Message = "dead: the daemon failed to remove it; the operator must look at the host's Docker Engine"
	default: // created, exited, removing
		st.State = runtime.Stopped
		st.Message = describeExit(c.State)
		if c.State.Status == container.StateCreated && st.Message == "" {
			st.Message = "created, never started"
		}
		if c.State.OOMKilled && c.State.ExitCode != 0 {
			// A stopped instance whose processes once ran out of memory
			// exits 0; the init itself killed exits 137.
			st.State = runtime.Failed
			st.Message = outOfMemory(c)
		}
		if c.State.Error != "" {
			// The daemon could not start it (a GPU gone, a hook failed).
			st.State = runtime.Failed
		}
	}
	return st
}

// initDied is the message of an instance whose init keeps ending.
const initDied = "the instance's init (gpurent's PID 1) keeps ending and the daemon keeps restarting it: " +
	"a fault of the platform, not of the image; tell the operator (the agent's log and `docker logs` of the container say more)"

// outOfMemory is the message of an instance the OOM killer ended as a whole.
func outOfMemory(c container.InspectResponse) string {
	limit := "its memory limit"
	if c.HostConfig != nil && c.HostConfig.Memory > 0 {
		limit = fmt.Sprintf("its memory limit of %d MiB", c.HostConfig.Memory>>20)
	}
	return "out of memory: the instance as a whole used " + limit +
		" and the kernel ended it; rent it with more memory, or make its processes use less"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	const limit = 300
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return s
}
