package docker

import (
	"fmt"

	"github.com/moby/moby/api/types/container"

	"github.com/gpurent/gpurent/internal/agent/pid1"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// maxStartupStatusBytes bounds the status file read back from an instance.
const maxStartupStatusBytes = 64 << 10

// readStartup reads the startup command's state from a running container
// whose init writes it (the label says where), nil when there is none to
// read. The file lies in the tenant's container, which may have replaced
// it by anything: it is read with readInRoot and parsed by
// pid1.ParseStatus, and what comes of it is only shown to that tenant.
func readStartup(c container.InspectResponse) (*agentproto.StartupStatus, error) {
	inside := c.Config.Labels[labelInitPath]
	if inside == "" || c.State == nil || c.State.Status != container.StateRunning || c.State.Pid <= 0 {
		return nil, nil
	}
	return readStartupAt(fmt.Sprintf("/proc/%d/root", c.State.Pid), inside)
}

// readStartupAt reads and parses the status file at inside under root.
func readStartupAt(root, inside string) (*agentproto.StartupStatus, error) {
	b, err := readInRoot(root, inside, maxStartupStatusBytes)
	if err != nil {
		return nil, err
	}
	st, err := pid1.ParseStatus(b)
	if err != nil {
		return nil, err
	}
	return &agentproto.StartupStatus{
		State: st.State, Command: st.Command, StartedAt: st.StartedAt, ExitedAt: st.ExitedAt,
		ExitCode: st.ExitCode, Signal: st.Signal, Error: st.Error,
	}, nil
}

// withStartup adds the startup command's state to the status of a running
// container; a file that cannot be read (not written yet, or spoilt by
// the tenant) leaves it nil and is logged at debug level.
func (r *Runtime) withStartup(c container.InspectResponse, st runtime.Status) runtime.Status {
	s, err := readStartup(c)
	if err != nil {
		r.log.Debug("docker: cannot read the startup command's state", "instance", st.InstanceID, "err", err)
		return st
	}
	st.Startup = s
	return st
}
