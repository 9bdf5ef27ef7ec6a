// Package dockertest helps tests run against the real Docker Engine: a
// client that fails the test (never skips it) when the daemon is missing, a
// busybox test image built locally FROM scratch (no image can be pulled on
// the test machines), exec into containers, and cleanup of the containers
// and volumes of test instances.
//
// It is ordinary (non-test) code so that the tests of several packages can
// share it; nothing in the product imports it.
package dockertest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/testtier"
)

// Unreachable is the failure message when no daemon answers.
const Unreachable = "Docker Engine not reachable: run `make test`, which installs and starts it"

// callTimeout bounds each helper's calls to the daemon, so that a wedged
// daemon fails a test instead of hanging it.
const callTimeout = 2 * time.Minute

// Client returns a client of the daemon named by the environment (or the
// default socket), with the API version negotiated. It fails the test when
// the daemon does not answer. The client is closed when the test ends.
func Client(t testing.TB) *client.Client {
	t.Helper()
	testtier.Require(t, "the Docker Engine")
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatalf("%s: %v", Unreachable, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatalf("%s (%s): %v", Unreachable, cli.DaemonHost(), err)
	}
	return cli
}

// Require fails the test unless the Docker Engine answers.
func Require(t testing.TB) { t.Helper(); Client(t) }

// NewInstanceID returns a fresh instance id for a test.
func NewInstanceID() string { return gpurent.NewID(gpurent.PrefixInstance) }

// Cleanup removes, when the test ends, the containers of the given instances
// and every volume labelled as theirs, whatever state the test left.
func Cleanup(t testing.TB, instanceIDs ...string) {
	t.Helper()
	cli := Client(t)
	t.Cleanup(func() { removeInstances(t, cli, instanceIDs) })
}

// CleanupScopes removes, when the test ends, every instance (containers
// and volumes) that runtimes of the given scopes made: the instances a
// test rented through agents without knowing their ids (the console's
// browser tests). Register it before the agents' own cleanup, so that it
// runs after they stopped.
func CleanupScopes(t testing.TB, scopes ...string) {
	t.Helper()
	cli := Client(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		seen := map[string]bool{}
		var ids []string
		for _, scope := range scopes {
			res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
				Filters: make(client.Filters).Add("label", "io.gpurent.scope="+scope)})
			if err != nil {
				t.Errorf("cleanup: list the containers of scope %s: %v", scope, err)
				continue
			}
			for _, c := range res.Items {
				if id := c.Labels[runtime.LabelInstance]; id != "" && !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
		removeInstances(t, cli, ids)
	})
}

// removeInstances removes the containers of the instances, in any scope,
// and every volume labelled as theirs.
func removeInstances(t testing.TB, cli *client.Client, instanceIDs []string) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	for _, id := range instanceIDs {
		// Every container of the instance, in any scope, found by
		// its label (this package does not import the runtime it
		// helps test, so it does not know the names).
		for _, name := range InstanceContainers(t, cli, id) {
			_, err := cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			if err != nil && !cerrdefs.IsNotFound(err) {
				t.Errorf("cleanup: remove container %s of %s: %v", name, id, err)
			}
		}
		vols, err := cli.VolumeList(ctx, client.VolumeListOptions{
			Filters: make(client.Filters).Add("label", runtime.LabelInstance+"="+id),
		})
		if err != nil {
			t.Errorf("cleanup: list volumes of %s: %v", id, err)
			continue
		}
		for _, v := range vols.Items {
			_, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
			if err != nil && !cerrdefs.IsNotFound(err) {
				t.Errorf("cleanup: remove volume %s: %v", v.Name, err)
			}
		}
	}
}

// Inspect returns a container as the daemon holds it.
func Inspect(t testing.TB, cli *client.Client, nameOrID string) container.InspectResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cli.ContainerInspect(ctx, nameOrID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect container %s: %v", nameOrID, err)
	}
	return res.Container
}

// ExecResult is what a command run in a container gave.
type ExecResult struct {
	Stdout, Stderr string
	ExitCode       int
}

// Exec runs cmd in a running container, as `docker exec` does, and waits for
// it to finish.
func Exec(t testing.TB, cli *client.Client, nameOrID string, cmd ...string) ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	created, err := cli.ExecCreate(ctx, nameOrID, client.ExecCreateOptions{
		Cmd: cmd, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		t.Fatalf("exec %q in %s: %v", cmd, nameOrID, err)
	}
	att, err := cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		t.Fatalf("exec %q in %s: attach: %v", cmd, nameOrID, err)
	}
	var stdout, stderr bytes.Buffer
	_, err = stdcopy.StdCopy(&stdout, &stderr, att.Reader)
	att.Close()
	if err != nil {
		t.Fatalf("exec %q in %s: read output: %v", cmd, nameOrID, err)
	}
	// The stream ends as the process exits; the daemon records the exit
	// code a moment later.
	for {
		res, err := cli.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
		if err != nil {
			t.Fatalf("exec %q in %s: inspect: %v", cmd, nameOrID, err)
		}
		if !res.Running {
			return ExecResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: res.ExitCode}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("exec %q in %s: still running after its output ended: %v", cmd, nameOrID, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// MustExec is Exec that fails the test unless the command exits 0, and
// returns its standard output.
func MustExec(t testing.TB, cli *client.Client, nameOrID string, cmd ...string) string {
	t.Helper()
	res := Exec(t, cli, nameOrID, cmd...)
	if res.ExitCode != 0 {
		t.Fatalf("exec %q in %s: exit code %d\nstdout: %s\nstderr: %s", cmd, nameOrID, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// String is for messages.
func (r ExecResult) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.ExitCode, r.Stdout, r.Stderr)
}

// InstanceContainers names every container (running or not) labelled as
// the instance's, in any scope, sorted.
func InstanceContainers(t testing.TB, cli *client.Client, instanceID string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", runtime.LabelInstance+"="+instanceID)})
	if err != nil {
		t.Fatalf("list the containers of %s: %v", instanceID, err)
	}
	var out []string
	for _, c := range res.Items {
		if len(c.Names) > 0 {
			out = append(out, strings.TrimPrefix(c.Names[0], "/"))
		}
	}
	slices.Sort(out)
	return out
}

// settleTimeout bounds how long InstanceContainer waits for a replaced
// container to go: after an upgrade or a move the new container starts
// (and the instance reports running) before the old one, and its layer,
// is removed, since that removal is not downtime.
const settleTimeout = 30 * time.Second

// InstanceContainer is the one container of the instance. It waits up to
// settleTimeout for a replaced one to be removed, and fails the test if
// there is then none or more than one.
func InstanceContainer(t testing.TB, cli *client.Client, instanceID string) string {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		names := InstanceContainers(t, cli, instanceID)
		if len(names) == 1 {
			return names[0]
		}
		if len(names) == 0 || time.Now().After(deadline) {
			t.Fatalf("instance %s has containers %v, want exactly one", instanceID, names)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
