package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// blobMiB is the size of the file the throughput benchmarks fetch.
const blobMiB = 64

// BenchmarkAccess measures reaching an instance, in one run, against the
// same thing without gpurent: ssh through the gateway to a command's first
// byte against `docker exec` of the command; an HTTP download through
// `ssh -L` and through the browser link against the same busybox httpd
// serving the same file on the host's loopback.
//
//	go test -run '^$' -bench Access -benchtime 20x ./internal/app/
func BenchmarkAccess(b *testing.B) {
	f := startDockerFleet(b, "abench", "rtx4090-24g", 1)
	f.credit(b, 100_000, "seed")
	alice := newSSHUser(b, f, "")
	in := alice.instance("rent", "--gpu", "rtx4090-24g", "--image", f.image, "--wait")
	defer dockertest.Cleanup(b, in.ID)
	alice.must("ssh", in.ID, "--print") // pins the gateway's host key
	acc := gatewayAccess(b, f)
	target := in.ID + "@" + acc.Host
	ssh := func(args ...string) []string { return append(append(alice.sshArgs(b, acc, "-p"), target), args...) }
	// The link's host serves the application at /.
	if out, errOut, code := command(b, "", "ssh", ssh(fmt.Sprintf("dd if=/dev/zero of=/root/data/blob bs=1M count=%d 2>/dev/null && "+
		"httpd -p 127.0.0.1:8080 -h /root/data && echo ok", blobMiB))...); code != 0 {
		b.Fatalf("start httpd inside: %d %s %s", code, out, errOut)
	}
	// The baseline: the same httpd and file on the host's loopback.
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "blob"), make([]byte, blobMiB<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	lp := freePort(b)
	hostd := exec.Command(dockertest.BusyboxPath, "httpd", "-f", "-p", fmt.Sprintf("127.0.0.1:%d", lp), "-h", dir)
	if err := hostd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { hostd.Process.Kill(); hostd.Wait() }()
	// ssh -L, started once.
	fp := freePort(b)
	fwdCtx, stopFwd := context.WithCancel(context.Background())
	defer stopFwd()
	fwd := exec.CommandContext(fwdCtx, "ssh", append(alice.sshArgs(b, acc, "-p"), "-N", "-o", "ExitOnForwardFailure=yes",
		"-L", fmt.Sprintf("127.0.0.1:%d:localhost:8080", fp), target)...)
	if err := fwd.Start(); err != nil {
		b.Fatal(err)
	}
	defer fwd.Wait()
	// The browser link, opened once (the cookie then does).
	var link apiv1.PortLink
	if err := json.Unmarshal([]byte(alice.must("open", in.ID, "8080", "-o", "json")), &link); err != nil {
		b.Fatal(err)
	}
	browser := localhostBrowser(b, time.Minute)
	get := func(c *http.Client, url string) {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || n != blobMiB<<20 {
			b.Fatalf("GET %s: %d, %d bytes, %v", url, resp.StatusCode, n, err)
		}
	}
	if resp, err := browser.Get(link.URL); err != nil { // the first visit sets the cookie
		b.Fatal(err)
	} else {
		resp.Body.Close()
	}
	proxyBlob := strings.TrimSuffix(link.URL[:strings.Index(link.URL, "?")], "/") + "/blob"
	eventually(b, "ssh -L listening", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", fp))
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	median := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	firstByte := func(prog string, args ...string) time.Duration {
		c := exec.Command(prog, args...)
		out, err := c.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(out, make([]byte, 1)); err != nil {
			b.Fatalf("%s: no output: %v", prog, err)
		}
		d := time.Since(t0)
		io.Copy(io.Discard, out)
		if err := c.Wait(); err != nil {
			b.Fatalf("%s: %v", prog, err)
		}
		return d
	}
	b.Run("session/ssh-gateway", func(b *testing.B) {
		var took []time.Duration
		for i := 0; i < b.N; i++ {
			took = append(took, firstByte("ssh", ssh("echo", "hi")...))
		}
		b.ReportMetric(median(took), "median-ms")
	})
	b.Run("session/docker-exec", func(b *testing.B) {
		name := dockertest.InstanceContainer(b, dockertest.Client(b), in.ID)
		var took []time.Duration
		for i := 0; i < b.N; i++ {
			took = append(took, firstByte("docker", "exec", name, "echo", "hi"))
		}
		b.ReportMetric(median(took), "median-ms")
	})
	plain := &http.Client{Timeout: time.Minute}
	for _, c := range []struct {
		name   string
		client *http.Client
		url    string
	}{
		{"download/loopback", plain, fmt.Sprintf("http://127.0.0.1:%d/blob", lp)},
		{"download/ssh-L", plain, fmt.Sprintf("http://127.0.0.1:%d/blob", fp)},
		{"download/browser-link", browser, proxyBlob},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(blobMiB << 20)
			for i := 0; i < b.N; i++ {
				get(c.client, c.url)
			}
		})
	}
}
