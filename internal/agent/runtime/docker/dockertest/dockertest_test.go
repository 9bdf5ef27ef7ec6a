package dockertest_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

func TestBusyboxImage(t *testing.T) {
	dockertest.Require(t) // here, not in the callers' goroutines: they cannot skip or fail t
	// Concurrent callers all get the image; at most one builds it.
	var wg sync.WaitGroup
	tags := make([]string, 4)
	for i := range tags {
		wg.Go(func() { tags[i] = dockertest.BusyboxImage(t) })
	}
	wg.Wait()
	for _, tag := range tags {
		if tag != dockertest.BusyboxTag {
			t.Fatalf("BusyboxImage = %q, want %q", tag, dockertest.BusyboxTag)
		}
	}

	cli := dockertest.Client(t)
	ctx := t.Context()
	name := "gpurent-dockertest-" + strings.ToLower(dockertest.NewInstanceID())
	_, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       name,
		Config:     &container.Config{Image: dockertest.BusyboxTag, Cmd: []string{"/bin/sh", "-c", dockertest.BusyboxShell}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cli.ContainerRemove(context.Background(), name, client.ContainerRemoveOptions{Force: true})
	})
	if _, err := cli.ContainerStart(ctx, name, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, applet := range []string{"sh", "sleep", "httpd", "cat", "ls", "echo", "env", "wget", "nc"} {
		if res := dockertest.Exec(t, cli, name, "which", applet); res.ExitCode != 0 {
			t.Errorf("applet %s missing: %s", applet, res)
		}
	}
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "sh", "-c", "echo $((6*7))")); got != "42" {
		t.Errorf("sh arithmetic = %q", got)
	}
	if res := dockertest.Exec(t, cli, name, "sh", "-c", "exit 3"); res.ExitCode != 3 {
		t.Errorf("exit code = %d, want 3", res.ExitCode)
	}

	// BusyboxShell ends cleanly on SIGTERM, well before the stop
	// timeout's SIGKILL.
	timeout := 60
	if _, err := cli.ContainerStop(ctx, name, client.ContainerStopOptions{Timeout: &timeout}); err != nil {
		t.Fatal(err)
	}
	c := dockertest.Inspect(t, cli, name)
	if c.State.Running || c.State.ExitCode != 0 {
		t.Errorf("after SIGTERM: running %v, exit code %d, want exit 0", c.State.Running, c.State.ExitCode)
	}
	// The image's own command is a shell, like a real base image's.
	img, err := cli.ImageInspect(ctx, dockertest.BusyboxTag)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(img.Config.Cmd, []string{"/bin/sh"}) || len(img.Config.Entrypoint) != 0 {
		t.Errorf("image command %q entrypoint %q, want a shell", img.Config.Cmd, img.Config.Entrypoint)
	}
	boot, err := cli.ImageInspect(ctx, dockertest.BusyboxBootImage(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(boot.Config.Cmd, []string{"/bin/sh", "-c", dockertest.BusyboxShell}) {
		t.Errorf("boot image command %q", boot.Config.Cmd)
	}
}
