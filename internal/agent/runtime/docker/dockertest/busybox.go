package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
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
)

// BusyboxTag names the test image.
const BusyboxTag = "gpurent-test/busybox:1"

// BusyboxPath is where busybox-static installs its binary.
const BusyboxPath = "/bin/busybox"

// busyboxRecipe changes whenever the image's layout changes, so that an
// image built by an older recipe is rebuilt.
const busyboxRecipe = "4"

// labelBusyboxDigest on the image records what it was built from.
const labelBusyboxDigest = "io.gpurent.test.busybox"

// busyboxCmd keeps the container running and exits 0 within a second of
// SIGTERM, so that stops are graceful and quick. A workload a test left
// as /root/data/boot.sh (executable) runs beside it from every start; a
// stop passes SIGTERM on to it and waits for it to end, so a workload that
// traps the signal finishes what it is writing (else the kernel kills it
// at any instruction once the first process exits).
const busyboxCmd = `["/bin/sh", "-c", "` + BusyboxShell + `"]`

// BusyboxShell is the shell program the test image's command runs.
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
	cli := Client(t)
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		t.Fatalf("busybox-static is not installed (%v): run `make test`, which installs it", err)
	}
	if err := checkStatic(BusyboxPath); err != nil {
		t.Fatalf("%s: %v: install busybox-static (run `make test`, which installs it)", BusyboxPath, err)
	}
	sum := sha256.Sum256(bin)
	digest := busyboxRecipe + ":" + hex.EncodeToString(sum[:])

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if built(ctx, t, cli, digest) {
		return BusyboxTag
	}
	unlock, err := lockFile(filepath.Join(os.TempDir(), "gpurent-dockertest-busybox.lock"))
	if err != nil {
		t.Fatalf("lock the busybox image build: %v", err)
	}
	defer unlock()
	if built(ctx, t, cli, digest) { // another builder finished while we waited
		return BusyboxTag
	}
	buildContext, err := busyboxContext(bin)
	if err != nil {
		t.Fatalf("busybox image: %v", err)
	}
	res, err := cli.ImageBuild(ctx, bytes.NewReader(buildContext), client.ImageBuildOptions{
		Tags:        []string{BusyboxTag},
		Labels:      map[string]string{labelBusyboxDigest: digest},
		Remove:      true,
		ForceRemove: true,
		NetworkMode: "none",
		Version:     build.BuilderV1,
	})
	if err != nil {
		t.Fatalf("build %s: %v", BusyboxTag, err)
	}
	defer res.Body.Close()
	readBuild(t, BusyboxTag, res.Body)
	if !built(ctx, t, cli, digest) {
		t.Fatalf("build %s finished but the image is not tagged", BusyboxTag)
	}
	return BusyboxTag
}

// built reports whether the tag holds an image of this busybox and recipe.
func built(ctx context.Context, t testing.TB, cli *client.Client, digest string) bool {
	t.Helper()
	res, err := cli.ImageInspect(ctx, BusyboxTag)
	if cerrdefs.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("inspect %s: %v", BusyboxTag, err)
	}
	return res.Config != nil && res.Config.Labels[labelBusyboxDigest] == digest
}

// checkStatic fails for a dynamically linked binary, which would not run in
// an image without a libc.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked")
		}
	}
	return nil
}

// busyboxContext is the build context: a Dockerfile and a root file system.
func busyboxContext(bin []byte) ([]byte, error) {
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
	dockerfile := "FROM scratch\nCOPY rootfs/ /\nWORKDIR /root\nCMD " + busyboxCmd + "\n"
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
