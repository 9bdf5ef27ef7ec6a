package delta

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReceiveRefusesDeviceNodes: the receiver runs as root on the host; a
// stream's block and character devices are left out (a moved instance's
// layer that held the host's disk node must not recreate it), while an
// overlay whiteout (character device 0/0) and the rest of the tree still
// arrive, and a node already at the destination is removed.
func TestReceiveRefusesDeviceNodes(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(src, "dev"), 0o755))
	must(unix.Mknod(filepath.Join(src, "disk"), unix.S_IFBLK|0o600, int(unix.Mkdev(7, 42))))
	must(unix.Mknod(filepath.Join(src, "dev", "kmsg"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 11))))
	must(unix.Mknod(filepath.Join(src, "whiteout"), unix.S_IFCHR, 0))
	must(os.WriteFile(filepath.Join(src, "dev", "file"), []byte("kept"), 0o644))
	// A node from an earlier copy, made before the receiver refused them.
	must(os.Mkdir(filepath.Join(dst, "dev"), 0o755))
	must(unix.Mknod(filepath.Join(dst, "dev", "kmsg"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 11))))

	_, rst := syncTrees(t, src, dst, Options{}, Options{})
	for _, p := range []string{"disk", "dev/kmsg"} {
		if _, err := os.Lstat(filepath.Join(dst, p)); !os.IsNotExist(err) {
			t.Errorf("%s exists at the destination (%v); want it refused", p, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dst, "whiteout"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("whiteout: %v mode %o rdev %d; want a character device 0/0", err, st.Mode, st.Rdev)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "dev", "file")); err != nil || string(b) != "kept" {
		t.Errorf("dev/file: %q %v", b, err)
	}
	if rst.DevicesSkipped != 2 || rst.Errors != 0 {
		t.Errorf("receiver stats %+v; want 2 devices skipped and no errors", rst)
	}
}
