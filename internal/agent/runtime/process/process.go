// Package process is a runtime.Runtime that runs each instance as a plain
// host process, for demos on machines without a container engine.
//
// It ISOLATES NOTHING: no filesystem, network, PID, CPU, memory or GPU
// isolation, no resource limits and no image. Its Name is "process" and the
// control plane shows that name wherever the host appears, so nobody mistakes
// a demo host for a production one. Production hosts use the Docker runtime.
//
// Each instance is a long-running placeholder process (a shell that sleeps
// until SIGTERM); the image cannot be run without a container engine, so it
// is only recorded. The process gets the environment the Docker runtime
// would set (NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES set to the
// instance's GPU UUIDs, GPURENT_INSTANCE_ID, the spec's Env) and runs in its
// volume directory, which survives stop, start and replacement.
//
// The process starts in its own session, so it outlives the agent. What the
// runtime knows lives on disk under its directory (see state.go), each
// process named by pid, start time and boot id, so a restarted agent adopts
// the processes still running and never mistakes a reused pid for one of
// them. The runtime is Linux-only: it reads /proc.
package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/keymutex"
)

// PlaceholderScript is what each instance runs (with /bin/sh -c) unless
// Config.Command says otherwise: it sleeps until told to stop, and stops
// cleanly on SIGTERM.
const PlaceholderScript = `trap "exit 0" TERM; while :; do sleep 1; done`

// Config configures the runtime.
type Config struct {
	// Dir holds the instances' state and volumes. Required; created 0700.
	Dir string
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL
	// (default 10 s).
	StopTimeout time.Duration
	// Command replaces /bin/sh -c PlaceholderScript (for demos that want a visible workload,
	// and tests). It runs with the instance's environment and working
	// directory; Command[0] must be an absolute path.
	Command []string
	Logger  *slog.Logger
}

// Runtime is the process runtime. It is safe for concurrent use; calls for
// the same instance are serialized.
type Runtime struct {
	dir         string
	stopTimeout time.Duration
	command     []string
	log         *slog.Logger
	procRoot    string
	bootID      string

	mu       sync.Mutex
	locks    keymutex.Mutex        // one per instance: its calls one at a time
	children map[int]chan struct{} // pid → closed once reaped, for processes this runtime started
}

var _ runtime.Runtime = (*Runtime)(nil)

// New opens (creating if needed) the runtime directory.
func New(cfg Config) (*Runtime, error) {
	if cfg.Dir == "" {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "process runtime: no directory")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "process runtime: bad directory %q", cfg.Dir)
	}
	cmd := cfg.Command
	if len(cmd) == 0 {
		cmd = []string{"/bin/sh", "-c", PlaceholderScript}
	}
	if !filepath.IsAbs(cmd[0]) {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "process runtime: command %q is not an absolute path", cmd[0])
	}
	r := &Runtime{
		dir:         dir,
		stopTimeout: cfg.StopTimeout,
		command:     append([]string(nil), cmd...),
		log:         cfg.Logger,
		procRoot:    "/proc",
		children:    map[int]chan struct{}{},
	}
	if r.stopTimeout <= 0 {
		r.stopTimeout = 10 * time.Second
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.bootID, err = readBootID(r.procRoot)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "process runtime needs Linux /proc")
	}
	for _, d := range []string{dir, filepath.Join(dir, instancesDir), filepath.Join(dir, volumesDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: create %s", d)
		}
	}
	return r, nil
}

// Name is "process": no isolation, demos only.
func (r *Runtime) Name() string { return "process" }

// List returns every instance the runtime holds, sorted by id. An instance
// whose process ended without Stop is Stopped with a message saying so, as
// the Docker runtime shows an exited container; one whose state cannot be
// read is Failed with the reason.
func (r *Runtime) List(ctx context.Context) ([]runtime.Status, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(r.dir, instancesDir))
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: list instances")
	}
	out := make([]runtime.Status, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() || !validName.MatchString(e.Name()) {
			continue
		}
		spec, proc, err := r.load(e.Name())
		switch {
		case err != nil:
			out = append(out, runtime.Status{InstanceID: e.Name(), State: runtime.Failed,
				Message: "process runtime: unreadable instance state: " + err.Error()})
		case spec != nil: // nil: removed meanwhile
			out = append(out, r.status(spec, proc))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].InstanceID < out[j].InstanceID })
	return out, nil
}

func (r *Runtime) status(spec *runtime.Spec, proc *procRecord) runtime.Status {
	st := runtime.Status{
		InstanceID:   spec.InstanceID,
		AllocationID: spec.AllocationID,
		GPUUUIDs:     append([]string(nil), spec.GPUUUIDs...),
	}
	switch {
	case proc == nil:
		st.State = runtime.Stopped
	case r.alive(proc):
		st.State = runtime.Running
		st.StartedAt = proc.StartedAt
	default:
		// Like an exited container: stopped, with what happened.
		st.State = runtime.Stopped
		st.Message = fmt.Sprintf("process %d exited without being stopped", proc.PID)
	}
	return st
}

// PID returns the pid of the instance's process, 0 when it is not running,
// and a not_found error when the runtime does not hold the instance.
func (r *Runtime) PID(instanceID string) (int, error) {
	if err := checkName("instance id", instanceID); err != nil {
		return 0, err
	}
	spec, proc, err := r.load(instanceID)
	if err != nil {
		return 0, gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: read instance %s", instanceID)
	}
	if spec == nil {
		return 0, gpurent.Errorf(gpurent.CodeNotFound, "instance %s not found", instanceID)
	}
	if !r.alive(proc) {
		return 0, nil
	}
	return proc.PID, nil
}

// Run makes the instance run per spec: a running process of the same
// allocation is left alone, one of another allocation is stopped and
// replaced, a stopped or failed one is started. The volume is kept.
func (r *Runtime) Run(ctx context.Context, spec runtime.Spec) (runtime.Status, error) {
	if err := checkSpec(spec); err != nil {
		return runtime.Status{}, err
	}
	spec = cloneSpec(spec)
	defer r.locks.Lock(spec.InstanceID)()
	if err := ctx.Err(); err != nil {
		return runtime.Status{}, err
	}
	old, proc, err := r.load(spec.InstanceID)
	if err != nil {
		r.log.Warn("process runtime: replacing unreadable instance state", "instance", spec.InstanceID, "err", err)
	}
	if old != nil && r.alive(proc) {
		if old.AllocationID == spec.AllocationID {
			return r.status(old, proc), nil
		}
		r.log.Info("process runtime: replacing instance for a new allocation", "instance", spec.InstanceID,
			"old_allocation", old.AllocationID, "allocation", spec.AllocationID)
		if err := r.stopLocked(ctx, spec.InstanceID, proc); err != nil {
			return runtime.Status{}, err
		}
	}
	idir, vdir := r.instanceDir(spec.InstanceID), r.volumeDir(spec.VolumeName)
	for _, d := range []string{idir, vdir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return runtime.Status{}, gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: create %s", d)
		}
	}
	// A stale proc.json (process gone) must not outlive the new spec.
	if err := os.Remove(filepath.Join(idir, procFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return runtime.Status{}, gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: clear instance %s", spec.InstanceID)
	}
	if err := writeJSON(filepath.Join(idir, specFile), spec); err != nil {
		return runtime.Status{}, gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: save instance %s", spec.InstanceID)
	}
	rec, err := r.start(spec, idir, vdir)
	if err != nil {
		return runtime.Status{}, err
	}
	r.log.Info("process runtime: instance started", "instance", spec.InstanceID, "allocation", spec.AllocationID, "pid", rec.PID)
	return r.status(&spec, rec), nil
}

// start launches the instance's process in its own session and records it.
func (r *Runtime) start(spec runtime.Spec, idir, vdir string) (*procRecord, error) {
	out, err := os.OpenFile(filepath.Join(idir, logFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: open output of %s", spec.InstanceID)
	}
	defer out.Close()
	// Never exec.CommandContext: the process must outlive every context,
	// the agent's included.
	cmd := exec.Command(r.command[0], r.command[1:]...)
	cmd.Dir = vdir
	cmd.Env = environ(spec, vdir)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: start instance %s", spec.InstanceID)
	}
	pid := cmd.Process.Pid
	// Not reaped yet, so /proc/<pid> exists even if it already exited.
	st, statErr := readProcStat(r.procRoot, pid)
	done := make(chan struct{})
	r.mu.Lock()
	r.children[pid] = done
	r.mu.Unlock()
	go func() { // reap, so no zombie is left while the agent is the parent
		_ = cmd.Wait()
		r.mu.Lock()
		delete(r.children, pid)
		r.mu.Unlock()
		close(done)
	}()
	rec := &procRecord{PID: pid, StartTicks: st.startTicks, BootID: r.bootID, StartedAt: time.Now().UTC().Truncate(time.Millisecond)}
	if statErr == nil {
		statErr = writeJSON(filepath.Join(idir, procFile), rec)
	}
	if statErr != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
		return nil, gpurent.WrapError(gpurent.CodeInternal, statErr, "process runtime: record instance %s", spec.InstanceID)
	}
	return rec, nil
}

// environ is the process's environment: a minimal base (the agent's own
// environment may hold secrets and is not passed on), the spec's Env, and
// the variables the Docker runtime sets, which Env cannot override.
func environ(spec runtime.Spec, vdir string) []string {
	env := map[string]string{
		"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME": vdir,
	}
	for k, v := range spec.Env {
		env[k] = v
	}
	gpus := strings.Join(spec.GPUUUIDs, ",")
	env["CUDA_VISIBLE_DEVICES"] = gpus // "": CUDA sees no GPU
	if gpus == "" {
		gpus = "void" // what the Docker runtime sets: no GPU
	}
	env["NVIDIA_VISIBLE_DEVICES"] = gpus
	env["GPURENT_INSTANCE_ID"] = spec.InstanceID
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list
}

// Stop stops the instance's process (SIGTERM to its process group, SIGKILL
// after StopTimeout), keeping its state and volume. Stopping an instance
// that is not running, or does not exist, does nothing.
func (r *Runtime) Stop(ctx context.Context, instanceID string) error {
	if err := checkName("instance id", instanceID); err != nil {
		return err
	}
	defer r.locks.Lock(instanceID)()
	spec, proc, err := r.load(instanceID)
	if err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: read instance %s", instanceID)
	}
	if spec == nil {
		return nil
	}
	return r.stopLocked(ctx, instanceID, proc)
}

// stopLocked ends proc if it is still the recorded process, then forgets
// it. The caller holds the instance lock.
func (r *Runtime) stopLocked(ctx context.Context, id string, proc *procRecord) error {
	if r.alive(proc) {
		if err := r.terminate(ctx, proc); err != nil {
			return gpurent.WrapError(gpurent.CodeUnavailable, err, "process runtime: stop instance %s", id)
		}
		r.log.Info("process runtime: instance stopped", "instance", id, "pid", proc.PID)
	}
	if err := os.Remove(filepath.Join(r.instanceDir(id), procFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: forget process of %s", id)
	}
	return nil
}

// terminate signals the process group and waits for the process to end.
// The kill after SIGTERM does not wait for ctx: a stop that was begun is
// finished, so no process is left half-stopped.
func (r *Runtime) terminate(ctx context.Context, p *procRecord) error {
	r.mu.Lock()
	done := r.children[p.PID]
	r.mu.Unlock()

	// The process leads its own group (Setsid): signal the group so its
	// children stop too.
	if err := syscall.Kill(-p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if !r.waitGone(ctx, p, done, r.stopTimeout) {
		if err := syscall.Kill(-p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		if !r.waitGone(context.Background(), p, done, 10*time.Second) {
			return fmt.Errorf("process %d still alive after SIGKILL", p.PID)
		}
	}
	// Stragglers of the group that ignored SIGTERM after the leader left.
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	return nil
}

// waitGone waits until p has ended (and, for a child of this runtime, been
// reaped), up to timeout or until ctx ends; it reports whether p ended.
func (r *Runtime) waitGone(ctx context.Context, p *procRecord, done <-chan struct{}, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	if done != nil {
		select {
		case <-done:
			return true
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	// Not our child: poll /proc (the real parent, or init, reaps it).
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if !r.alive(p) {
			return true
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return !r.alive(p)
		case <-ctx.Done():
			return !r.alive(p)
		}
	}
}

// Remove stops the instance and deletes its state and, if removeVolume,
// its volume (volumeName, or the one its spec names when volumeName is
// ""). Removing what does not exist does nothing.
func (r *Runtime) Remove(ctx context.Context, instanceID, volumeName string, removeVolume bool) error {
	if err := checkName("instance id", instanceID); err != nil {
		return err
	}
	if volumeName != "" {
		if err := checkName("volume name", volumeName); err != nil {
			return err
		}
	}
	defer r.locks.Lock(instanceID)()
	spec, proc, err := r.load(instanceID)
	if err != nil {
		r.log.Warn("process runtime: removing unreadable instance state", "instance", instanceID, "err", err)
	}
	if err := r.stopLocked(ctx, instanceID, proc); err != nil {
		return err
	}
	if err := os.RemoveAll(r.instanceDir(instanceID)); err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: remove instance %s", instanceID)
	}
	if !removeVolume {
		return nil
	}
	if volumeName == "" && spec != nil {
		volumeName = spec.VolumeName
	}
	if volumeName == "" {
		return nil
	}
	if err := os.RemoveAll(r.volumeDir(volumeName)); err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "process runtime: remove volume %s", volumeName)
	}
	r.log.Info("process runtime: instance removed", "instance", instanceID, "volume", volumeName)
	return nil
}

func cloneSpec(s runtime.Spec) runtime.Spec {
	s.GPUUUIDs = append([]string(nil), s.GPUUUIDs...)
	if s.Env != nil {
		env := make(map[string]string, len(s.Env))
		for k, v := range s.Env {
			env[k] = v
		}
		s.Env = env
	}
	return s
}
