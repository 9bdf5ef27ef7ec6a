package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// On-disk layout under Config.Dir:
//
//	instances/<id>/spec.json    the runtime.Spec last run
//	instances/<id>/proc.json    the process started for it; absent when stopped
//	instances/<id>/output.log   the process's stdout and stderr
//	volumes/<volume>/           the instance's data; its working directory
const (
	instancesDir = "instances"
	volumesDir   = "volumes"
	specFile     = "spec.json"
	procFile     = "proc.json"
	logFile      = "output.log"
)

// procRecord identifies one started process beyond its pid: the pid with
// its start time (clock ticks after boot, from /proc/<pid>/stat) and the
// boot id names the process uniquely, so a reused pid is never taken for it.
type procRecord struct {
	PID        int       `json:"pid"`
	StartTicks uint64    `json:"start_ticks"`
	BootID     string    `json:"boot_id"`
	StartedAt  time.Time `json:"started_at"`
}

// validName is Docker's rule for container names; it keeps ids and volume
// names single, safe path components ("." and ".." cannot match).
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func checkName(kind, name string) error {
	if !validName.MatchString(name) {
		return gpurent.Errorf(gpurent.CodeInvalid, "%s %q: want 1-128 characters of letters, digits, '_', '.', '-', starting with a letter or digit", kind, name)
	}
	return nil
}

func checkSpec(spec runtime.Spec) error {
	if err := checkName("instance id", spec.InstanceID); err != nil {
		return err
	}
	if err := checkName("volume name", spec.VolumeName); err != nil {
		return err
	}
	if strings.TrimSpace(spec.Image) == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "instance %s: no image", spec.InstanceID)
	}
	for _, u := range spec.GPUUUIDs {
		if u == "" || strings.ContainsAny(u, ",\x00") || strings.EqualFold(u, "all") {
			return gpurent.Errorf(gpurent.CodeInvalid, "instance %s: bad GPU UUID %q", spec.InstanceID, u)
		}
	}
	for k, v := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return gpurent.Errorf(gpurent.CodeInvalid, "instance %s: bad environment variable %q", spec.InstanceID, k)
		}
	}
	return nil
}

func (r *Runtime) instanceDir(id string) string { return filepath.Join(r.dir, instancesDir, id) }
func (r *Runtime) volumeDir(name string) string { return filepath.Join(r.dir, volumesDir, name) }

// readJSON decodes path into v; a missing file gives fs.ErrNotExist.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// writeJSON replaces path atomically (write, fsync, rename), so a crash
// leaves either the old or the new content, never a torn file.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// load reads an instance's records. spec is nil when the instance does not
// exist; proc is nil when no process was recorded (never started, or stopped).
func (r *Runtime) load(id string) (spec *runtime.Spec, proc *procRecord, err error) {
	dir := r.instanceDir(id)
	var s runtime.Spec
	if err := readJSON(filepath.Join(dir, specFile), &s); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, statErr := os.Stat(dir); statErr == nil {
				return nil, nil, fmt.Errorf("instance %s: directory without %s", id, specFile)
			}
			return nil, nil, nil
		}
		return nil, nil, err
	}
	var p procRecord
	if err := readJSON(filepath.Join(dir, procFile), &p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &s, nil, nil
		}
		return &s, nil, err
	}
	return &s, &p, nil
}
