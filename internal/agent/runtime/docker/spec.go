package docker

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// Environment variables the runtime sets in every instance. They win over a
// spec's Env of the same name: NVIDIA_VISIBLE_DEVICES decides which GPUs the
// NVIDIA Container Toolkit exposes, so a tenant (or an image that sets it to
// "all", as the CUDA images do) must never widen it.
const (
	EnvNvidiaVisibleDevices = "NVIDIA_VISIBLE_DEVICES"
	EnvCUDAVisibleDevices   = "CUDA_VISIBLE_DEVICES"
	EnvInstanceID           = "GPURENT_INSTANCE_ID"
)

// noGPUs is what NVIDIA_VISIBLE_DEVICES holds for an instance without GPUs:
// the toolkit then exposes none, yet still sets up the driver libraries.
const noGPUs = "void"

// ContainerPrefix starts the name of every managed container.
const ContainerPrefix = "gpurent-"

// ContainerName is the container that runs an instance.
func ContainerName(instanceID string) string { return ContainerPrefix + instanceID }

// ScopedContainerName is the container of an instance in a runtime of
// that scope with Config.SeparateNames.
func ScopedContainerName(scope, instanceID string) string {
	return ContainerName(instanceID) + "." + scope
}

// name is the container of an instance in this runtime.
func (r *Runtime) name(instanceID string) string {
	if r.cfg.Scope != "" && r.cfg.SeparateNames {
		return ScopedContainerName(r.cfg.Scope, instanceID)
	}
	return ContainerName(instanceID)
}

// volumeName is the name of an instance's volume in this runtime.
func (r *Runtime) volumeName(v string) string {
	if v != "" && r.cfg.Scope != "" && r.cfg.SeparateNames {
		return v + "." + r.cfg.Scope
	}
	return v
}

// Capabilities returns the capabilities an instance keeps after dropping
// ALL: Docker's default set without NET_RAW (raw sockets: ARP/ICMP spoofing
// on a shared bridge) and MKNOD (device nodes). Enough for package managers,
// sudo-less root workflows, chown/chmod and binding low ports.
func Capabilities() []string {
	return []string{
		"CAP_AUDIT_WRITE",
		"CAP_CHOWN",
		"CAP_DAC_OVERRIDE",
		"CAP_FOWNER",
		"CAP_FSETID",
		"CAP_KILL",
		"CAP_NET_BIND_SERVICE",
		"CAP_SETFCAP",
		"CAP_SETGID",
		"CAP_SETPCAP",
		"CAP_SETUID",
		"CAP_SYS_CHROOT",
	}
}

// validName reports whether s is safe as a part of a Docker container or
// volume name: [a-zA-Z0-9][a-zA-Z0-9_.-]*, at most 128 bytes.
func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '.' && c != '-') {
			return false
		}
	}
	return true
}

// validateSpec checks what the runtime cannot repair itself.
func validateSpec(spec runtime.Spec) error {
	switch {
	case !validName(spec.InstanceID):
		return gpurent.Errorf(gpurent.CodeInvalid, "instance id %q is not usable as a container name", spec.InstanceID)
	case spec.AllocationID == "":
		return gpurent.Errorf(gpurent.CodeInvalid, "instance %s: allocation id is required", spec.InstanceID)
	case strings.TrimSpace(spec.Image) == "":
		return gpurent.Errorf(gpurent.CodeInvalid, "instance %s: image is required", spec.InstanceID)
	case !validName(spec.VolumeName):
		return gpurent.Errorf(gpurent.CodeInvalid, "instance %s: volume name %q is not usable as a Docker volume name", spec.InstanceID, spec.VolumeName)
	case spec.CPUMilli < 0 || spec.MemoryMiB < 0 || spec.PidsLimit < 0 || spec.VolumeGiB < 0:
		return gpurent.Errorf(gpurent.CodeInvalid, "instance %s: resource limits must not be negative", spec.InstanceID)
	}
	seen := make(map[string]bool, len(spec.GPUUUIDs))
	for _, u := range spec.GPUUUIDs {
		lu := strings.ToLower(u)
		if u == "" || strings.ContainsAny(u, ", \t\n") || lu == "all" || lu == "none" || lu == noGPUs {
			return gpurent.Errorf(gpurent.CodeInvalid, "instance %s: %q is not a GPU UUID", spec.InstanceID, u)
		}
		if seen[u] {
			return gpurent.Errorf(gpurent.CodeInvalid, "instance %s: GPU %s listed twice", spec.InstanceID, u)
		}
		seen[u] = true
	}
	for k := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return gpurent.Errorf(gpurent.CodeInvalid, "instance %s: %q is not an environment variable name", spec.InstanceID, k)
		}
	}
	return nil
}

// environment returns the instance's environment, sorted by name: the spec's
// Env, overridden by the variables the runtime owns.
func environment(spec runtime.Spec) []string {
	env := maps.Clone(spec.Env)
	if env == nil {
		env = make(map[string]string, 3)
	}
	gpus := strings.Join(spec.GPUUUIDs, ",")
	env[EnvCUDAVisibleDevices] = gpus
	if gpus == "" {
		gpus = noGPUs
	}
	env[EnvNvidiaVisibleDevices] = gpus
	env[EnvInstanceID] = spec.InstanceID
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// gpusFromEnv reads the GPU UUIDs back from a container's environment.
func gpusFromEnv(env []string) []string {
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, EnvNvidiaVisibleDevices+"=")
		if !ok {
			continue
		}
		if v == "" || v == noGPUs || v == "none" {
			return nil
		}
		return strings.Split(v, ",")
	}
	return nil
}

// labels are put on the container of an instance.
func labels(spec runtime.Spec, scope string) map[string]string {
	l := map[string]string{
		runtime.LabelManaged:    "true",
		runtime.LabelInstance:   spec.InstanceID,
		runtime.LabelAllocation: spec.AllocationID,
		runtime.LabelVolume:     spec.VolumeName,
	}
	if scope != "" {
		l[LabelScope] = scope
	}
	return l
}

// volumeLabels are put on the data volume of an instance. The volume carries
// no allocation and no scope: it outlives every placement of its instance.
func volumeLabels(spec runtime.Spec) map[string]string {
	return map[string]string{
		runtime.LabelManaged:  "true",
		runtime.LabelInstance: spec.InstanceID,
		runtime.LabelVolume:   spec.VolumeName,
	}
}

// hostname is the instance id where Linux accepts it as a host name.
func hostname(instanceID string) string {
	if len(instanceID) > 63 || strings.ContainsAny(instanceID, "_.") {
		return ""
	}
	return instanceID
}

// Where gpurent's init lives inside every instance: the static gpurent
// executable (Config.InitBinary), bind-mounted read-only beside the sftp
// helper the access server copies into the same directory, and the small
// tmpfs the init writes its status file to.
const (
	InitPath      = "/.gpurent/init"
	InitRunDir    = "/.gpurent/run"
	InitStatus    = InitRunDir + "/startup.json"
	initSubcmd    = "instance-init"
	initRunTmpfs  = "rw,nosuid,nodev,noexec,size=64k,mode=1777"
	initStopSig   = "SIGTERM"
	logDriver     = "json-file"
	labelInitPath = "io.gpurent.init.status"
	// labelExecRelay marks a container whose init binary runs the exec
	// relay (internal/execrelay): its commands without a terminal run
	// through it, so the Engine cannot cut their output. Containers made
	// before it keep the direct exec.
	labelExecRelay = "io.gpurent.exec-relay"
)

// startupCommand is the argv the init starts: the image's entrypoint and
// command when the spec sets none, nothing for "", else the shell line.
func startupCommand(spec runtime.Spec, img imageCommand) []string {
	switch {
	case spec.Startup == nil:
		return append(slices.Clone(img.Entrypoint), img.Cmd...)
	case *spec.Startup == "":
		return nil
	default:
		return []string{"/bin/sh", "-c", *spec.Startup}
	}
}

// containerConfig builds the container of an instance, whose image runs
// img by default. It is pure, so the hardening is checked without a
// daemon too.
func (r *Runtime) containerConfig(spec runtime.Spec, img imageCommand) (*container.Config, *container.HostConfig) {
	stop := int(r.cfg.StopTimeout.Seconds())
	cfg := &container.Config{
		Image:       spec.Image,
		Hostname:    hostname(spec.InstanceID),
		Env:         environment(spec),
		Labels:      labels(spec, r.cfg.Scope),
		StopTimeout: &stop,
		// PID 1 is gpurent's init whatever the image says; a stop's
		// SIGTERM goes to it (an image's STOPSIGNAL would not make the
		// init stop), and it passes it on to the startup command.
		Entrypoint: append([]string{InitPath, initSubcmd, "--status", InitStatus, "--"}, startupCommand(spec, img)...),
		StopSignal: initStopSig,
	}
	cfg.Labels[labelInitPath] = InitStatus
	cfg.Labels[labelExecRelay] = "1"
	pids := spec.PidsLimit
	if pids == 0 {
		pids = r.cfg.DefaultPidsLimit
	}
	useInit := false // gpurent's init is PID 1, not Docker's
	mode := r.network
	if mode == NetworkPasta {
		mode = NetworkNone // the agent attaches the NAT once it runs (pasta.go)
	}
	host := &container.HostConfig{
		NetworkMode:   container.NetworkMode(mode),
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyUnlessStopped},
		Privileged:    false,
		CapDrop:       []string{"ALL"},
		CapAdd:        Capabilities(),
		SecurityOpt:   []string{"no-new-privileges:true"},
		Init:          &useInit,
		Mounts: []mount.Mount{{
			Type:   mount.TypeVolume,
			Source: spec.VolumeName,
			Target: runtime.DataPath,
		}, {
			Type:     mount.TypeBind,
			Source:   r.cfg.InitBinary,
			Target:   InitPath,
			ReadOnly: true,
		}},
		Tmpfs: map[string]string{InitRunDir: initRunTmpfs},
		LogConfig: container.LogConfig{Type: logDriver, Config: map[string]string{
			"max-size": strconv.FormatInt(r.cfg.LogMaxBytes, 10),
			"max-file": strconv.Itoa(r.cfg.LogMaxFiles),
		}},
		Resources: container.Resources{
			NanoCPUs:  spec.CPUMilli * 1_000_000,
			Memory:    spec.MemoryMiB << 20,
			PidsLimit: &pids,
		},
	}
	if r.layerBytes > 0 {
		host.StorageOpt = map[string]string{"size": fmt.Sprintf("%d", r.layerBytes)}
	}
	if r.network == NetworkPasta {
		host.DNS = []netip.Addr{PastaDNS}
		cfg.Labels[LabelNetwork] = NetworkPasta
	}
	// A limit above what the machine has is refused by the daemon (it
	// happens with fake GPUs, whose host declares more than it has): cap
	// at the machine, which is what the limit means there anyway.
	if r.hostCPUs > 0 && host.NanoCPUs > r.hostCPUs*1_000_000_000 {
		host.NanoCPUs = r.hostCPUs * 1_000_000_000
	}
	if r.hostMemory > 0 && host.Memory > r.hostMemory {
		host.Memory = r.hostMemory
	}
	if spec.MemoryMiB > 0 {
		// No swap beyond the limit, and a /dev/shm big enough for
		// PyTorch DataLoader workers (Docker's 64 MiB default breaks
		// them). tmpfs pages count against the memory limit anyway.
		host.MemorySwap = host.Memory
		host.ShmSize = host.Memory / 2
	}
	if r.nvidia && len(spec.GPUUUIDs) > 0 {
		host.DeviceRequests = []container.DeviceRequest{{
			Driver:       "nvidia",
			DeviceIDs:    slices.Clone(spec.GPUUUIDs),
			Capabilities: [][]string{{"gpu"}},
		}}
	}
	return cfg, host
}

// describeExit says why a container is not running, for Status.Message.
func describeExit(st *container.State) string {
	if st == nil {
		return ""
	}
	var parts []string
	if st.OOMKilled {
		parts = append(parts, "killed: out of memory")
	}
	if st.ExitCode != 0 {
		parts = append(parts, fmt.Sprintf("exit code %d", st.ExitCode))
	}
	if st.Error != "" {
		parts = append(parts, st.Error)
	}
	return strings.Join(parts, "; ")
}
