package dockertest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"golang.org/x/crypto/bcrypt"
)

// RegistryPath is where Debian's docker-registry package (the Docker
// Distribution registry) installs its server.
const RegistryPath = "/usr/bin/docker-registry"

// Registry is a real OCI registry process serving one test on loopback,
// storing in the test's temporary directory. The daemon pulls from and
// pushes to it over plain HTTP: Docker Engine treats 127.0.0.0/8 as an
// insecure registry by default.
type Registry struct {
	// Addr is host:port, the prefix of the registry's image references.
	Addr string
}

// StartRegistry starts a registry for the test and stops it when the test
// ends. It fails the test (never skips it) when docker-registry is not
// installed.
func StartRegistry(t testing.TB) Registry {
	t.Helper()
	return StartRegistryWith(t, RegistryOptions{})
}

// RegistryOptions configure StartRegistryWith.
type RegistryOptions struct {
	// Dir is where it stores images (empty: a new temporary directory).
	// Two registries given the same Dir serve the same images: one
	// read-only with pull accounts, one writable to push through, as an
	// operator runs them (docs/security.md).
	Dir string
	// Users, when set, are the only accounts it admits (htpasswd, user to
	// password); the registry's htpasswd accounts may each push and pull.
	Users map[string]string
	// ReadOnly refuses every push and delete, whoever asks.
	ReadOnly bool
}

// StartRegistryWith starts a registry configured by o for the test.
func StartRegistryWith(t testing.TB, o RegistryOptions) Registry {
	t.Helper()
	if _, err := os.Stat(RegistryPath); err != nil {
		t.Fatalf("the registry is not installed (%v): run `make test`, which installs Debian's docker-registry", err)
	}
	dir := t.TempDir()
	data := o.Dir
	if data == "" {
		data = filepath.Join(dir, "data")
	}
	extra := ""
	if o.ReadOnly {
		extra += "  maintenance:\n    readonly:\n      enabled: true\n"
	}
	auth := ""
	if len(o.Users) > 0 {
		var lines []byte
		for u, p := range o.Users {
			h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.MinCost)
			if err != nil {
				t.Fatal(err)
			}
			lines = fmt.Appendf(lines, "%s:%s\n", u, h)
		}
		pw := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(pw, lines, 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: gpurent-test\n    path: %s\n", pw)
	}
	// A free port: another process may take it between this probe and the
	// registry's listen, so a start that fails on it is tried again.
	var last string
	for range 3 {
		addr := freeLoopback(t)
		cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\n%s%shttp:\n  addr: %s\n",
			data, extra, auth, addr)
		cfgPath := filepath.Join(dir, "config.yml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		cmd := exec.Command(RegistryPath, "serve", cfgPath)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", RegistryPath, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if registryUp(addr, exited) {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			return Registry{Addr: addr}
		}
		_ = cmd.Process.Kill()
		<-exited
		last = out.String()
	}
	t.Fatalf("the registry did not start:\n%s", last)
	return Registry{}
}

// freeLoopback is a loopback address with a port nothing listens on now.
func freeLoopback(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// registryUp waits until the registry at addr answers its API root, or
// its process exits (false). The wait is generous: a loaded machine may
// take long to start it.
func registryUp(addr string, exited <-chan error) bool {
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if resp, err := hc.Get("http://" + addr + "/v2/"); err == nil {
			_ = resp.Body.Close()
			// 401: up, and asking for the accounts it was given.
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// Push tags the local image src as name in the registry, pushes it, and
// removes the tag from the daemon again, so that a later use of the
// returned reference has to pull it. name is path:tag, e.g. "big:1".
func (r Registry) Push(t testing.TB, src, name string) string {
	t.Helper()
	cli := Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	ref := r.Addr + "/" + name
	if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: src, Target: ref}); err != nil {
		t.Fatalf("tag %s as %s: %v", src, ref, err)
	}
	// The registry takes any credentials; the daemon wants some encoded.
	resp, err := cli.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: "e30="})
	if err == nil {
		err = resp.Wait(ctx)
		_ = resp.Close()
	}
	if err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	r.Forget(t, ref)
	return ref
}

// Forget removes ref (and the layers only it holds) from the daemon, if
// it is there; the registry keeps it.
func (r Registry) Forget(t testing.TB, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if _, err := Client(t).ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatalf("remove %s from the daemon: %v", ref, err)
	}
}

// TryPush tags the local image src as name in the registry and pushes it
// as user (empty: anonymously), answering the push's error; the tag is
// removed from the daemon again either way. The abuse tests use it: a pull
// account pushing must fail.
func (r Registry) TryPush(t testing.TB, src, name, user, password string) (string, error) {
	t.Helper()
	cli := Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	ref := r.Addr + "/" + name
	if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: src, Target: ref}); err != nil {
		t.Fatalf("tag %s as %s: %v", src, ref, err)
	}
	defer r.Forget(t, ref)
	auth := "e30="
	if user != "" {
		b, err := json.Marshal(map[string]string{"username": user, "password": password, "serveraddress": r.Addr})
		if err != nil {
			t.Fatal(err)
		}
		auth = base64.URLEncoding.EncodeToString(b)
	}
	resp, err := cli.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: auth})
	if err == nil {
		err = resp.Wait(ctx)
		_ = resp.Close()
	}
	return ref, err
}
