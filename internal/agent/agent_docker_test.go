package agent

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/gpu/fake"
)

// The agent with the production runtime, against the real Docker Engine:
// converge, survive an agent restart without restarting the container,
// stop, remove. It fails (never skips) when the daemon is missing.
func TestAgentWithDockerRuntime(t *testing.T) {
	dockertest.Require(t)
	cli := dockertest.Client(t)
	cp := newControlPlane(t)
	h := newHost(t, cp)
	// Heartbeats carry the startup command's state as it changes.
	h.heartbeat = 300 * time.Millisecond
	id := dockertest.NewInstanceID()
	dockertest.Cleanup(t, id)
	image := dockertest.BusyboxImage(t)

	newDocker := func() *docker.Runtime {
		rt, err := docker.New(context.Background(), docker.Config{Network: "none", NoPull: true, InitBinary: dockertest.InitBinary(t),
			StopTimeout: 5 * time.Second, Logger: quiet()})
		if err != nil {
			t.Fatalf("docker.New: %v", err)
		}
		t.Cleanup(func() { _ = rt.Close() })
		return rt
	}
	want := agentproto.DesiredInstance{
		InstanceID:   id,
		AllocationID: gpurent.NewID(gpurent.PrefixAllocation),
		State:        agentproto.StateRunning,
		Image:        image,
		GPUUUIDs:     []string{fake.UUID(hostName, 0), fake.UUID(hostName, 1)},
		CPUMilli:     1000,
		MemoryMiB:    128,
		VolumeName:   gpurent.NewID(gpurent.PrefixVolume),
		VolumeGiB:    1,
		Env:          map[string]string{"JUPYTER_TOKEN": "t0ken"},
	}
	line := "echo started; exit 7"
	want.Startup = &line

	ag := h.startWith(h.config(newDocker()))
	cp.waitUntil("registration as a docker host", func() bool {
		return len(cp.registrations) == 1 && cp.registrations[0].Runtime == "docker"
	})
	since := cp.reportCount()
	cp.setDesired(hostName, want)
	cp.waitReport("the container running", since, hasState(id, agentproto.StateRunning, want.AllocationID))
	// The desired startup command ran, ended with 7, and the instance
	// stays up: the report says so.
	cp.waitReport("the startup command's exit reported", since, func(rep agentproto.Report) bool {
		ai, ok := instance(rep, id)
		return ok && ai.State == agentproto.StateRunning && ai.Startup != nil && ai.Startup.State == "exited" &&
			ai.Startup.ExitCode != nil && *ai.Startup.ExitCode == 7 && len(ai.Startup.Command) == 3 && ai.Startup.Command[2] == line
	})
	name := docker.ContainerName(id)
	first := dockertest.Inspect(t, cli, name)

	// The agent exits; the container does not notice. A new agent adopts it.
	ag.stop(t)
	if c := dockertest.Inspect(t, cli, name); !c.State.Running || c.State.StartedAt != first.State.StartedAt {
		t.Fatalf("agent exit touched the container: %+v", c.State)
	}
	h.startWith(h.config(newDocker()))
	since = cp.reportCount()
	cp.setDesired(hostName, want)
	cp.waitReport("the adopted container running", since, hasState(id, agentproto.StateRunning, want.AllocationID))
	if c := dockertest.Inspect(t, cli, name); c.ID != first.ID || c.State.StartedAt != first.State.StartedAt {
		t.Fatalf("new agent replaced or restarted the container: %s %s → %s %s",
			first.ID, first.State.StartedAt, c.ID, c.State.StartedAt)
	}

	stopped := want
	stopped.State, stopped.AllocationID, stopped.GPUUUIDs = agentproto.StateStopped, "", nil
	since = cp.reportCount()
	cp.setDesired(hostName, stopped)
	cp.waitReport("the container stopped", since, hasState(id, agentproto.StateStopped, ""))

	absent := stopped
	absent.State = agentproto.StateAbsent
	since = cp.reportCount()
	cp.setDesired(hostName, absent)
	cp.waitReport("the container removed", since, hasState(id, agentproto.StateAbsent, ""))
}
