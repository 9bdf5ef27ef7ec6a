package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent/internal/staticexe"
)

// BusyboxTag names the test image, whose command is a shell (like
// ubuntu's): run as an instance, the shell exits at once and the instance
// stays up under gpurent's init.
const BusyboxTag = "gpurent-test/busybox:1"

// BusyboxBootTag names the same image with a long-lived command
// (BusyboxShell), like an image whose entrypoint script starts a service.
const BusyboxBootTag = "gpurent-test/busybox-boot:1"

// BusyboxPath is where busybox-static installs its binary.
const BusyboxPath = "/bin/busybox"

// busyboxRecipe changes whenever the image's layout changes, so that an
// image built by an older recipe is rebuilt.
const busyboxRecipe = "5"

// labelBusyboxDigest on the image records what it was built from.
const labelBusyboxDigest = "io.gpurent.test.busybox"

// busyboxCmd is the test image's command: a shell, as in real base images.
const busyboxCmd = `["/bin/sh"]`

// busyboxBootCmd is BusyboxBootTag's command: BusyboxShell.
const busyboxBootCmd = `["/bin/sh", "-c", "` + BusyboxShell + `"]`

// BusyboxShell is a shell program that keeps running and exits 0 within a
// second of SIGTERM, so that stops are graceful and quick: a test's
// startup command (runtime.Spec.Startup) when it needs a long-lived
// process, and BusyboxBootTag's command. A workload a test left as
// /root/data/boot.sh (executable) runs beside it from every start; a stop
// passes SIGTERM on to it and waits for it to end, so a workload that
// traps the signal finishes what it is writing.
const BusyboxShell = `trap 'kill -TERM $b 2>/dev/null; wait $b; exit 0' TERM; b=; ` +
	`if [ -x /root/data/boot.sh ]; then /root/data/boot.sh & b=$!; fi; while :; do sleep 1; done`

// BusyboxImage returns the tag of a minimal image, FROM scratch, holding the
// host's static busybox with a link for every applet (sh, sleep, httpd, cat,
// ls, env, ...) under /bin, /sbin, /usr/bin and /usr/sbin. It builds the
// image once: a build is skipped when the tag already holds an image of the
// same busybox and recipe, and a host-wide file lock serialises builders,
// so parallel tests and several test binaries may call it at once.
func BusyboxImage(t testing.TB) string {
	t.Helper()
	return busyboxImage(t, BusyboxTag, busyboxCmd)
}

// BusyboxBootImage is BusyboxImage with BusyboxShell as the command
// (BusyboxBootTag).
func BusyboxBootImage(t testing.TB) string {
	t.Helper()
	return busyboxImage(t, BusyboxBootTag, busyboxBootCmd)
}

func busyboxImage(t testing.TB, tag, cmd string) string {
	t.Helper()
	cli := Client(t)
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		t.Fatalf("busybox-static is not installed (%v): run `make test`, which installs it", err)
	}
	if err := staticexe.CheckFile(BusyboxPath); err != nil {
		t.Fatalf("%s: %v: install busybox-static (run `make test`, which installs it)", BusyboxPath, err)
	}
	sum := sha256.Sum256(bin)
	cmdSum := sha256.Sum256([]byte(cmd))
	digest := busyboxRecipe + ":" + hex.EncodeToString(sum[:]) + ":" + hex.EncodeToString(cmdSum[:4])

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if built(ctx, t, cli, tag, digest) {
		return tag
	}
	unlock, err := lockFile(filepath.Join(os.TempDir(), "gpurent-dockertest-busybox.lock"))
	if err != nil {
		t.Fatalf("lock the busybox image build: %v", err)
	}
	defer unlock()
	if built(ctx, t, cli, tag, digest) { // another builder finished while we waited
		return tag
	}
	buildContext, err := busyboxContext(bin, cmd)
	if err != nil {
		t.Fatalf("busybox image: %v", err)
	}
	res, err := cli.ImageBuild(ctx, bytes.NewReader(buildContext), client.ImageBuildOptions{
		Tags:        []string{tag},
		Labels:      map[string]string{labelBusyboxDigest: digest},
		Remove:      true,
		ForceRemove: true,
		NetworkMode: "none",
		Version:     build.BuilderV1,
	})
	if err != nil {
		t.Fatalf("build %s: %v", tag, err)
	}
	defer res.Body.Close()
	readBuild(t, tag, res.Body)
	if !built(ctx, t, cli, tag, digest) {
		t.Fatalf("build %s finished but the image is not tagged", tag)
	}
	return tag
}

// built reports whether the tag holds an image of this busybox and recipe.
func built(ctx context.Context, t testing.TB, cli *client.Client, tag, digest string) bool {
	t.Helper()
	res, err := cli.ImageInspect(ctx, tag)
	if cerrdefs.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("inspect %s: %v", tag, err)
	}
	return res.Config != nil && res.Config.Labels[labelBusyboxDigest] == digest
}

// busyboxContext is the build context: a Dockerfile and a root file system.
func busyboxContext(bin []byte, cmd string) ([]byte, error) {
	out, err := exec.Command(BusyboxPath, "--list-full").Output()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Unix(0, 0) // stable contents, so the build cache hits
	file := func(name string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Name: name + "/", Mode: mode, ModTime: now, Typeflag: tar.TypeDir})
	}
	dockerfile := "FROM scratch\nCOPY rootfs/ /\nWORKDIR /root\nCMD " + cmd + "\n"
	steps := []error{
		file("Dockerfile", 0o644, []byte(dockerfile)),
		dir("rootfs", 0o755),
	}
	for _, d := range []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "root", "tmp"} {
		mode := int64(0o755)
		switch d {
		case "root":
			mode = 0o700
		case "tmp":
			mode = 0o1777
		}
		steps = append(steps, dir("rootfs/"+d, mode))
	}
	steps = append(steps,
		file("rootfs/bin/busybox", 0o755, bin),
		file("rootfs/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")),
		file("rootfs/etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")),
	)
	for _, applet := range strings.Fields(string(out)) {
		// "usr/bin/env"; skip "linuxrc" and busybox itself.
		if !strings.Contains(applet, "/") || applet == "bin/busybox" {
			continue
		}
		steps = append(steps, tw.WriteHeader(&tar.Header{
			Name: "rootfs/" + applet, Linkname: BusyboxPath, Mode: 0o777, ModTime: now, Typeflag: tar.TypeSymlink,
		}))
	}
	steps = append(steps, tw.Close())
	if err := errors.Join(steps...); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
