package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestDemoServesItsBaseImages runs `gpurent serve --demo` with Docker: it
// builds its base image FROM scratch, serves it from a real registry on
// loopback, seeds the catalog with it (pre-pulled), and its banner's Try
// line rents from the catalog; the customer's `gpurent images` lists it
// and the agents pull it from the registry.
func TestDemoServesItsBaseImages(t *testing.T) {
	dockertest.Require(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	cmd := serveCommand()
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"--demo", "--demo-hosts", "1", "--demo-runtime", "docker", "--listen", "127.0.0.1:0",
		"--ssh-listen", "", "--data-dir", t.TempDir()})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	eventually(t, "the demo's banner", func() bool {
		select {
		case err := <-done:
			t.Fatalf("serve --demo ended: %v\n%s", err, out.String())
		default:
		}
		return strings.Contains(out.String(), "Press Ctrl-C")
	})
	banner := out.String()
	for _, want := range []string{"base images: in a real registry on 127.0.0.1:", "--image " + DemoImageName, "gpurent images"} {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner lacks %q:\n%s", want, banner)
		}
	}
	if strings.Contains(banner, "ubuntu:24.04") {
		t.Errorf("the banner still rents a Docker Hub image:\n%s", banner)
	}
	url := regexp.MustCompile(`control plane on (http://\S+)`).FindStringSubmatch(banner)
	if url == nil {
		t.Fatalf("no URL in the banner:\n%s", banner)
	}
	u := newUser(t, url[1])
	if o, e, err := u.run(DemoCustomerPassword+"\n", "login", "--email", DemoCustomerEmail, "--password-stdin"); err != nil {
		t.Fatalf("login: %v %s%s", err, o, e)
	}
	var list []apiv1.BaseImage
	if err := json.Unmarshal([]byte(u.must("images", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != DemoImageName || !strings.HasPrefix(list[0].Ref, "127.0.0.1:") || !list[0].Prepull {
		t.Fatalf("the demo's catalog: %+v", list)
	}
	cli := dockertest.Client(t)
	t.Cleanup(func() { dockertest.Registry{}.Forget(t, list[0].Ref) })
	eventually(t, "the agents pre-pull the demo's image from its registry", func() bool {
		_, err := cli.ImageInspect(ctx, list[0].Ref)
		return err == nil
	})

	// The README's rent: the catalog image, whose command is a shell that
	// exits at once without a terminal, gives a machine that stays up
	// under gpurent's init (the demo's own static build of it).
	// (The one host's GPUs are benchmarked as they join: wait for one.)
	eventually(t, "a free H100 once the onboarding benchmarks are done", func() bool {
		return freeGPUs(t, u, "h100-80g-sxm") > 0
	})
	var in apiv1.Instance
	if err := json.Unmarshal([]byte(u.must("rent", "--gpu", "h100-80g-sxm", "--count", "1", "--image", DemoImageName, "--wait", "-o", "json")), &in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dockertest.Cleanup(t, in.ID) })
	eventually(t, "the shell's exit shown while the instance runs", func() bool {
		if err := json.Unmarshal([]byte(u.must("show", in.ID, "-o", "json")), &in); err != nil {
			t.Fatal(err)
		}
		return in.Startup != nil && in.Startup.State == "exited"
	})
	if in.State != "running" || in.Startup.ExitCode == nil || *in.Startup.ExitCode != 0 {
		t.Fatalf("after its shell exited the instance is %s, startup %+v; want running, exited 0", in.State, in.Startup)
	}
	ct := dockertest.Inspect(t, cli, dockertest.InstanceContainer(t, cli, in.ID))
	if !ct.State.Running || len(ct.Config.Entrypoint) == 0 || ct.Config.Entrypoint[0] != "/.gpurent/init" {
		t.Fatalf("the container: running %v, entrypoint %v", ct.State.Running, ct.Config.Entrypoint)
	}
	u.must("rm", in.ID, "--yes")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve --demo: %v", err)
	}
}
