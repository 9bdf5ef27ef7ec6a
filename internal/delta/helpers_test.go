package delta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// syncTrees runs one pass from src to dst over net.Pipe.
func syncTrees(t testing.TB, src, dst string, sopts, ropts Options) (Stats, Stats) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	type res struct {
		st  Stats
		err error
	}
	ch := make(chan res, 1)
	go func() {
		st, err := Receive(ctx, dst, b, ropts)
		ch <- res{st, err}
	}()
	sst, serr := Send(ctx, src, a, sopts)
	rr := <-ch
	if serr != nil {
		t.Fatalf("Send: %v", serr)
	}
	if rr.err != nil {
		t.Fatalf("Receive: %v", rr.err)
	}
	return sst, rr.st
}

// xattrNS is the namespace the tests use for overlay-style xattrs:
// trusted.* where the filesystem takes it, else user.* (said in the log).
func xattrNS(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "probe")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lsetxattr(p, "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		t.Logf("NOTE: this filesystem refuses trusted.* xattrs (%v); checking user.* instead", err)
		if err := unix.Lsetxattr(p, "user.probe", []byte("y"), 0); err != nil {
			t.Fatalf("the test filesystem supports neither trusted.* nor user.* xattrs (%v): run the tests on ext4, xfs or tmpfs as root", err)
		}
		return "user."
	}
	return "trusted."
}

// fileInfo is what the tests compare of one path.
type fileInfo struct {
	Kind   Kind
	Perm   uint32
	UID    uint32
	GID    uint32
	Size   int64
	Mtime  int64
	Rdev   uint64
	Target string
	Sum    [32]byte
	Xattrs string
	Link   string // first path of the same inode, for hard links
}

func snapshot(t testing.TB, root string, withDirMtime bool) map[string]fileInfo {
	t.Helper()
	out := map[string]fileInfo{}
	inodes := map[uint64]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		fi := fileInfo{Kind: kindOf(st.Mode), Perm: st.Mode & 07777, UID: st.Uid, GID: st.Gid, Mtime: mtimeOf(&st)}
		switch fi.Kind {
		case KindRegular:
			fi.Size = st.Size
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi.Sum = sha256.Sum256(b)
			if st.Nlink > 1 {
				if first, ok := inodes[st.Ino]; ok {
					fi.Link = first
				} else {
					inodes[st.Ino] = rel
				}
			}
		case KindSymlink:
			fi.Target, _ = os.Readlink(p)
			fi.Perm = 0
		case KindCharDev, KindBlockDev:
			fi.Rdev = st.Rdev
		case KindDir:
			if !withDirMtime {
				fi.Mtime = 0
			}
		}
		buf := make([]byte, 64<<10)
		n, _ := unix.Llistxattr(p, buf)
		var names []string
		for _, nm := range strings.Split(string(buf[:n]), "\x00") {
			if nm != "" && copiedXattr(nm) {
				names = append(names, nm)
			}
		}
		sort.Strings(names)
		for _, nm := range names {
			v := make([]byte, 64<<10)
			m, _ := unix.Lgetxattr(p, nm, v)
			fi.Xattrs += nm + "=" + string(v[:m]) + ";"
		}
		out[rel] = fi
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func requireEqualTrees(t testing.TB, src, dst string) {
	t.Helper()
	a, b := snapshot(t, src, true), snapshot(t, dst, true)
	var diffs []string
	for p, fa := range a {
		fb, ok := b[p]
		if !ok {
			diffs = append(diffs, "missing at destination: "+p)
			continue
		}
		if fa != fb {
			diffs = append(diffs, fmt.Sprintf("%s differs:\n  src %+v\n  dst %+v", p, fa, fb))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			diffs = append(diffs, "extra at destination: "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		if len(diffs) > 20 {
			diffs = diffs[:20]
		}
		t.Fatalf("trees differ:\n%s", strings.Join(diffs, "\n"))
	}
}

// gen builds random trees.
type gen struct {
	t   testing.TB
	rng *rand.Rand
	ns  string
}

func (g *gen) data(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := g.rng.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func (g *gen) must(err error) {
	g.t.Helper()
	if err != nil {
		g.t.Fatal(err)
	}
}

var _ = bytes.Equal
