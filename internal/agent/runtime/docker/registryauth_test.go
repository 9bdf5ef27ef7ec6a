package docker_test

import (
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

// TestOperatorRegistryPull runs the operator's registry as docs/security.md
// says to: a writable endpoint the operator pushes through, and a
// read-only endpoint over the same storage whose only account is the pull
// credential agents get. A runtime holding that credential pulls and runs
// the image; one without it is refused by the registry; and the agents'
// credential cannot push, not even as the account that may pull.
func TestOperatorRegistryPull(t *testing.T) {
	dir := t.TempDir()
	push := dockertest.StartRegistryWith(t, dockertest.RegistryOptions{Dir: dir, Users: map[string]string{"operator": "push-secret"}})
	pull := dockertest.StartRegistryWith(t, dockertest.RegistryOptions{Dir: dir, ReadOnly: true,
		Users: map[string]string{"agents": "pull-secret"}})
	base := dockertest.BusyboxImage(t)
	name := "base/shell:" + strings.ToLower(gpurent.NewID("t"))
	if _, err := push.TryPush(t, base, name, "operator", "push-secret"); err != nil {
		t.Fatalf("the operator's push: %v", err)
	}
	ref := pull.Addr + "/" + name
	t.Cleanup(func() { pull.Forget(t, ref) })
	cli := dockertest.Client(t)

	// Without the credential: the registry refuses the pull.
	anon := newRuntime(t, docker.Config{})
	spec := newSpec(t)
	spec.Image = ref
	if _, err := anon.Run(t.Context(), spec); err == nil || !strings.Contains(strings.ToLower(err.Error()), "auth") {
		t.Fatalf("an anonymous pull from the read-only endpoint: %v, want refused for authentication", err)
	}
	if _, err := cli.ImageInspect(t.Context(), ref); !cerrdefs.IsNotFound(err) {
		t.Fatalf("the anonymous pull left the image: %v", err)
	}

	// With a wrong password: refused too.
	wrong := &runtime.Registries{}
	wrong.Put(runtime.RegistryAuth{Addr: pull.Addr, Username: "agents", Password: "guess"})
	if _, err := newRuntime(t, docker.Config{Registries: wrong}).Run(t.Context(), spec); err == nil {
		t.Fatal("a pull with a wrong password ran")
	}

	regs := &runtime.Registries{}
	regs.Put(runtime.RegistryAuth{Addr: strings.ToUpper(pull.Addr), Username: "agents", Password: "pull-secret"})
	withCred := newRuntime(t, docker.Config{Registries: regs})
	if st := mustRun(t, withCred, spec); st.State != runtime.Running {
		t.Fatalf("with the pull credential: %s", st.State)
	}

	// The agents' credential pushes nothing: the endpoint it opens is
	// read-only whoever asks.
	if _, err := pull.TryPush(t, base, "evil/overwrite:1", "agents", "pull-secret"); err == nil {
		t.Fatal("the agents' pull credential pushed an image")
	}
	if _, err := pull.TryPush(t, base, name, "agents", "pull-secret"); err == nil {
		t.Fatal("the agents' pull credential overwrote a base image")
	}
	// Nor is it an account of the writable endpoint.
	if _, err := push.TryPush(t, base, "evil/other:1", "agents", "pull-secret"); err == nil {
		t.Fatal("the agents' pull credential pushed through the operator's endpoint")
	}
}
