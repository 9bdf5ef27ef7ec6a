package app

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
)

// Where the demo finds what it builds its base images with and serves
// them from: Debian's busybox-static and docker-registry packages (which
// `make test` installs).
const (
	demoBusyboxPath  = "/bin/busybox"
	demoRegistryPath = "/usr/bin/docker-registry"
)

// DemoImageName is the demo catalog's base image: a BusyBox shell built
// here FROM scratch, whose command is a shell as in real base images.
const DemoImageName = "shell:1"

// demoRegistry is a real registry process serving the demo's base images
// on loopback.
type demoRegistry struct {
	addr string
	cmd  *exec.Cmd
	done chan error
}

// startDemoRegistry starts Debian's docker-registry on a free loopback
// port, storing under dir; nil (no error) when it is not installed.
func startDemoRegistry(dir string) (*demoRegistry, error) {
	if _, err := os.Stat(demoRegistryPath); err != nil {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n",
		filepath.Join(dir, "data"), addr)
	path := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd := exec.Command(demoRegistryPath, "serve", path)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the demo registry: %w", err)
	}
	r := &demoRegistry{addr: addr, cmd: cmd, done: make(chan error, 1)}
	go func() { r.done <- cmd.Wait() }()
	hc := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-r.done:
			return nil, fmt.Errorf("the demo registry exited (%v): %s", err, out.String())
		default:
		}
		if resp, err := hc.Get("http://" + addr + "/v2/"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
	}
	r.Stop()
	return nil, fmt.Errorf("the demo registry did not answer on %s: %s", addr, out.String())
}

// Stop ends the registry process.
func (r *demoRegistry) Stop() {
	if r == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

// seedDemoImages builds the demo's base image (with Docker), pushes it to
// reg when there is one, and puts it in the catalog, marked to pre-pull.
// It answers how the catalog is served, for the banner.
func seedDemoImages(ctx context.Context, s *Server, useDocker bool, initBin string, reg *demoRegistry) (string, error) {
	local := "gpurent-demo/shell:1"
	ref, how := local, "recorded only: the process runtime runs no image"
	if useDocker {
		d, err := docker.New(ctx, docker.Config{InitBinary: initBin})
		if err != nil {
			return "", err
		}
		if err := d.BuildShellImage(ctx, local, demoBusyboxPath, map[string]string{"io.gpurent.demo": "base"}); err != nil {
			return "", fmt.Errorf("build the demo's base image (needs busybox-static): %w", err)
		}
		how = "no registry installed (apt-get install docker-registry): the catalog uses the Docker Engine's local image " + local
		if reg != nil {
			ref = reg.addr + "/base/shell:1"
			if err := d.PushImage(ctx, local, ref); err != nil {
				return "", err
			}
			// Only the registry holds it now: the agents' pre-pull fetches it.
			if err := d.RemoveImage(ctx, ref); err != nil {
				return "", err
			}
			how = "in a real registry on " + reg.addr + " (Debian's docker-registry), pre-pulled by every host"
		}
	}
	img := &gpurent.BaseImage{Name: DemoImageName, Ref: ref, Framework: "base", Versions: map[string]string{"busybox": "1"},
		Description: "BusyBox shell built FROM scratch by the demo; its command is a shell, like ubuntu or pytorch images",
		Prepull:     useDocker}
	if err := s.Store.PutBaseImage(ctx, img); err != nil {
		return "", err
	}
	return how, nil
}
