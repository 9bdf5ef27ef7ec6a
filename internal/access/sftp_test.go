//go:build linux

package access_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

// hostDisk is the major and minor number of the block device that holds
// the host's root file system (or, under an overlay root, the first disk
// the kernel lists): what an image's `mknod /disk b MAJ MIN` would open.
func hostDisk(t *testing.T) (uint32, uint32) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err != nil {
		t.Fatal(err)
	}
	if maj := unix.Major(st.Dev); maj != 0 {
		return maj, unix.Minor(st.Dev)
	}
	f, err := os.Open("/proc/partitions")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			continue
		}
		maj, err1 := strconv.ParseUint(fs[0], 10, 32)
		minor, err2 := strconv.ParseUint(fs[1], 10, 32)
		if err1 == nil && err2 == nil {
			return uint32(maj), uint32(minor)
		}
	}
	t.Fatalf("no block device of this host found in /proc/partitions")
	return 0, 0
}

// runImageInstance starts an instance of image under the fixture's runtime.
func (f *fixture) runImageInstance(image string) string {
	f.t.Helper()
	id := dockertest.NewInstanceID()
	dockertest.Cleanup(f.t, id)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := f.rt.Run(ctx, runtime.Spec{
		InstanceID: id, AllocationID: gpurent.NewID(gpurent.PrefixAllocation), Image: image,
		CPUMilli: 1000, MemoryMiB: 256, VolumeName: gpurent.NewID(gpurent.PrefixVolume), VolumeGiB: 1,
	}); err != nil {
		f.t.Fatalf("Run %s: %v", image, err)
	}
	return id
}

// TestSFTPServesNoDeviceNodes: an image that ships a node of the host's
// disk (and of /dev/kmsg, and a fifo) gives its renter neither read nor
// write of them through sftp or scp, while regular files work, and no
// path reaches outside the instance's root. The old helper, host root in
// a chroot outside the container's device cgroup, read the host's disk.
func TestSFTPServesNoDeviceNodes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	maj, minor := hostDisk(t)
	image := dockertest.BuildImage(t, fmt.Sprintf("gpurent-test/devnodes:%d-%d", maj, minor), dockertest.File{
		Name: "Dockerfile", Mode: 0o644,
		Body: fmt.Appendf(nil, "FROM %s\nRUN mknod /disk b %d %d && mknod /kmsg c 1 11 && mkfifo /fifo && echo regular > /ok.txt\n",
			dockertest.BusyboxImage(t), maj, minor),
	})
	id := f.runImageInstance(image)

	// The Go client first, reading a bounded amount: on a server that
	// would serve the nodes, nothing here writes to the disk. (Where the
	// host itself may not open its disk, as in some sandboxes, /kmsg is
	// what the old helper, host root outside the device cgroup, read.)
	sc := goClient(t, f, id)
	c, err := sftp.NewClient(sc)
	if err != nil {
		t.Fatalf("sftp client: %v", err)
	}
	defer c.Close()
	for _, node := range []string{"/disk", "/kmsg"} {
		fh, err := c.Open(node)
		if err != nil {
			continue
		}
		buf := make([]byte, 8192)
		n, rerr := fh.Read(buf)
		fh.Close()
		if n > 0 {
			t.Fatalf("read %d bytes of the host's %s through sftp: %q", n, node, buf[:min(n, 64)])
		}
		t.Errorf("open %s succeeded (read: %v); want it refused", node, rerr)
	}
	if fh, err := c.OpenFile("/kmsg", os.O_WRONLY); err == nil {
		n, werr := fh.Write([]byte("gpurent access test: sftp wrote to a device node\n"))
		fh.Close()
		t.Errorf("open /kmsg for writing succeeded (wrote %d: %v); want it refused", n, werr)
	}
	opened := make(chan error, 1)
	go func() {
		fh, err := c.Open("/fifo")
		if err == nil {
			fh.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err == nil {
			t.Errorf("open /fifo succeeded; want it refused")
		}
	case <-time.After(time.Minute):
		_ = sc.Close() // else closing the sftp client waits for the open
		t.Fatalf("open /fifo still blocks after a minute; want it refused at once")
	}
	if _, err := c.Create("/kmsg"); err == nil {
		t.Errorf("create over /kmsg succeeded; want it refused")
	}
	if err := c.Truncate("/kmsg", 0); err == nil {
		t.Errorf("truncate /kmsg succeeded; want it refused")
	}
	if err := c.Link("/kmsg", "/kmsg2"); err == nil {
		t.Errorf("hard link to /kmsg succeeded; want it refused")
	}
	// Regular files work, and the root is the instance's.
	fh, err := c.Create("/root/data/new.txt")
	if err != nil {
		t.Fatalf("create a regular file: %v", err)
	}
	if _, err := fh.Write([]byte("written\n")); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	if got := f.inInstanceOf(id, "cat", "/root/data/new.txt"); got != "written\n" {
		t.Errorf("the new file holds %q", got)
	}
	for _, p := range []string{"/../../../../ok.txt", "../../../../../ok.txt", "/proc/1/root/ok.txt"} {
		fh, err := c.Open(p)
		if err != nil {
			t.Errorf("open %s: %v", p, err)
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(fh, 1<<10))
		fh.Close()
		if string(b) != "regular\n" {
			t.Errorf("%s reads %q; want the instance's /ok.txt", p, b)
		}
	}

	// The real OpenSSH sftp and scp, each refused, each leaving nothing.
	local := filepath.Join(f.dir, "local.txt")
	if err := os.WriteFile(local, []byte("from the client\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sftpBatch := func(cmd string) result {
		args := append(f.opts(f.key), "-P", strconv.Itoa(f.addr.Port), "-b", "-", id+"@127.0.0.1")
		return f.run(cmd+"\n", "sftp", args...)
	}
	scp := func(from, to string) result {
		return f.run("", "scp", append(f.opts(f.key), "-P", strconv.Itoa(f.addr.Port), from, to)...)
	}
	remote := id + "@127.0.0.1:"
	for _, node := range []string{"/disk", "/kmsg", "/fifo"} {
		got := filepath.Join(f.dir, "got"+strings.ReplaceAll(node, "/", "-"))
		if r := sftpBatch("get " + node + " " + got); r.code == 0 {
			t.Errorf("sftp get %s: %+v; want a failure", node, r)
		}
		if r := scp(remote+node, got); r.code == 0 {
			t.Errorf("scp %s down: %+v; want a failure", node, r)
		}
		if st, err := os.Stat(got); err == nil && st.Size() > 0 {
			t.Errorf("%s: %d bytes came down", node, st.Size())
		}
	}
	for _, node := range []string{"/kmsg", "/fifo"} {
		if r := sftpBatch("put " + local + " " + node); r.code == 0 {
			t.Errorf("sftp put %s: %+v; want a failure", node, r)
		}
		if r := scp(local, remote+node); r.code == 0 {
			t.Errorf("scp up to %s: %+v; want a failure", node, r)
		}
	}
	got := filepath.Join(f.dir, "ok.txt")
	if r := scp(remote+"/ok.txt", got); r.code != 0 {
		t.Fatalf("scp a regular file down: %+v", r)
	}
	if b, _ := os.ReadFile(got); string(b) != "regular\n" {
		t.Errorf("scp down got %q", b)
	}
	if r := sftpBatch("put " + local + " /root/data/up.txt"); r.code != 0 {
		t.Fatalf("sftp put a regular file: %+v", r)
	}
	if got := f.inInstanceOf(id, "cat", "/root/data/up.txt"); got != "from the client\n" {
		t.Errorf("uploaded file holds %q", got)
	}
}

// inInstanceOf runs a command in another instance of the fixture's runtime.
func (f *fixture) inInstanceOf(id string, cmd ...string) string {
	f.t.Helper()
	return dockertest.MustExec(f.t, dockertest.Client(f.t), docker.ContainerName(id), cmd...)
}
