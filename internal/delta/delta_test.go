package delta

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"golang.org/x/sys/unix"
)

var oldTime = time.Date(2023, 5, 17, 10, 11, 12, 123456789, time.UTC)

// buildTree makes a tree with every file type; large files are returned.
func buildTree(g *gen, root string) []string {
	var large []string
	dirs := []string{"."}
	for i := 0; i < 12; i++ {
		parent := dirs[g.rng.IntN(len(dirs))]
		d := filepath.Join(parent, "dir"+string(rune('a'+i)))
		g.must(os.Mkdir(filepath.Join(root, d), 0o755))
		dirs = append(dirs, d)
	}
	modes := []os.FileMode{0o600, 0o755, 0o644, 0o4755 | os.ModeSetuid, 0o2750}
	for i := 0; i < 60; i++ {
		d := dirs[g.rng.IntN(len(dirs))]
		p := filepath.Join(root, d, "f"+string(rune('A'+i%26))+string(rune('0'+i/26)))
		var size int
		switch {
		case i%10 == 0:
			size = 0
		case i%7 == 0:
			size = 1<<20 + g.rng.IntN(3<<20)
			large = append(large, p)
		default:
			size = g.rng.IntN(40 << 10)
		}
		g.must(os.WriteFile(p, g.data(size), 0o600))
		m := uint32(modes[i%len(modes)].Perm())
		if i%len(modes) == 3 {
			m |= unix.S_ISUID
		}
		if i%len(modes) == 4 {
			m |= unix.S_ISGID
		}
		g.must(os.Lchown(p, 1000+i%3, 1000+i%2))
		g.must(unix.Chmod(p, m))
		if i%5 == 1 {
			g.must(unix.Lsetxattr(p, "user.note", []byte("file "+p), 0))
		}
	}
	// Symlinks: relative, absolute, dangling, pointing out of the tree.
	g.must(os.Symlink("dira/../fA0", filepath.Join(root, "link-rel")))
	g.must(os.Symlink("/etc/passwd", filepath.Join(root, "link-abs")))
	g.must(os.Symlink("nowhere/at/all", filepath.Join(root, dirs[1], "link-dangling")))
	g.must(os.Symlink("../../../../..", filepath.Join(root, "link-out")))
	g.must(unix.Fchownat(unix.AT_FDCWD, filepath.Join(root, "link-abs"), 1234, 1234, unix.AT_SYMLINK_NOFOLLOW))
	// Special files: FIFO, an overlay whiteout, a socket (device nodes
	// are refused: TestReceiveRefusesDeviceNodes).
	g.must(unix.Mkfifo(filepath.Join(root, "fifo"), 0o640))
	g.must(unix.Mknod(filepath.Join(root, dirs[2], "whiteout"), unix.S_IFCHR, 0))
	g.must(unix.Mknod(filepath.Join(root, "sock"), unix.S_IFSOCK|0o600, 0))
	// An opaque directory and a hard link pair.
	opaque := filepath.Join(root, dirs[3])
	g.must(unix.Lsetxattr(opaque, g.ns+"overlay.opaque", []byte("y"), 0))
	g.must(os.WriteFile(filepath.Join(root, "hl1"), []byte("linked content"), 0o644))
	g.must(os.Link(filepath.Join(root, "hl1"), filepath.Join(root, dirs[4], "hl2")))
	// Old mtimes everywhere, directories last (deepest first).
	var all []string
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { all = append(all, p); return nil })
	for i := len(all) - 1; i >= 0; i-- {
		mt := oldTime.Add(time.Duration(i) * time.Minute)
		ts := []unix.Timespec{unix.NsecToTimespec(mt.UnixNano()), unix.NsecToTimespec(mt.UnixNano())}
		g.must(unix.UtimesNanoAt(unix.AT_FDCWD, all[i], ts, unix.AT_SYMLINK_NOFOLLOW))
	}
	return large
}

func TestSyncFullThenDelta(t *testing.T) {
	g := &gen{t: t, rng: rand.New(rand.NewPCG(1, 2)), ns: xattrNS(t)}
	src, dst := t.TempDir(), t.TempDir()
	large := buildTree(g, src)
	if len(large) < 3 {
		t.Fatalf("tree has %d large files", len(large))
	}
	s1, r1 := syncTrees(t, src, dst, Options{}, Options{})
	requireEqualTrees(t, src, dst)
	if s1.Errors != 0 || r1.Errors != 0 || r1.XattrsSkipped != 0 {
		t.Fatalf("first pass errors: send %+v receive %+v", s1, r1)
	}
	if s1.MatchedBytes != 0 || s1.LiteralBytes == 0 || s1.LiteralBytes != r1.LiteralBytes {
		t.Fatalf("first pass: %+v / %+v", s1, r1)
	}
	total := s1.LiteralBytes
	if s1.BytesSent > total+total/10 {
		t.Fatalf("first copy moved %d wire bytes for %d data bytes", s1.BytesSent, total)
	}
	t.Logf("first pass: %d files, %d data bytes, %d wire bytes out, %d in", s1.FilesSeen, total, s1.BytesSent, s1.BytesReceived)

	// A second pass with nothing changed moves no file data.
	s2, _ := syncTrees(t, src, dst, Options{}, Options{})
	if s2.FilesTransferred != 0 || s2.LiteralBytes != 0 {
		t.Fatalf("unchanged tree re-sent data: %+v", s2)
	}

	// Change about 1%: rewrite ranges, append, truncate, delete, add,
	// replace a file by a directory and back.
	var changed int64
	regions := 0
	slack := int64(0)
	for i, p := range large {
		if strings.Contains(p, "/dira/") {
			continue // removed below
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		g.must(err)
		st, _ := f.Stat()
		size := st.Size()
		bs := int64(blockSize(size))
		switch i % 3 {
		case 0: // rewrite a range in the middle
			n := int64(4000)
			_, err = f.WriteAt(g.data(int(n)), size/2)
			changed += n
		case 1: // append
			n := int64(10000)
			_, err = f.WriteAt(g.data(int(n)), size)
			changed += n
		case 2: // truncate
			err = f.Truncate(size - size/5)
		}
		g.must(err)
		g.must(f.Close())
		regions++
		slack += 2 * bs
	}
	g.must(os.Remove(filepath.Join(src, "fifo")))
	g.must(os.WriteFile(filepath.Join(src, "new-file"), g.data(5000), 0o640))
	changed += 5000
	g.must(os.Remove(filepath.Join(src, "hl1")))            // the link survives as hl2
	g.must(os.Remove(filepath.Join(src, "link-rel")))       // file → dir
	g.must(os.Mkdir(filepath.Join(src, "link-rel"), 0o711)) //
	g.must(os.WriteFile(filepath.Join(src, "link-rel", "x"), []byte("x"), 0o600))
	changed++
	g.must(os.RemoveAll(filepath.Join(src, "dira"))) // a directory goes
	g.must(os.WriteFile(filepath.Join(src, "dira"), []byte("now a file"), 0o600))
	changed += 10
	g.must(os.Chmod(filepath.Join(src, "sock"), 0o660))
	g.must(os.Remove(filepath.Join(src, "link-abs")))
	g.must(os.Symlink("/etc/hostname", filepath.Join(src, "link-abs")))

	s3, r3 := syncTrees(t, src, dst, Options{Final: true}, Options{})
	requireEqualTrees(t, src, dst)
	meta := int64(64 << 10)
	if regions < 2 {
		t.Fatalf("only %d large files changed", regions)
	}
	if s3.LiteralBytes < changed || s3.LiteralBytes > changed+slack+meta {
		t.Fatalf("delta sent %d literal bytes for %d changed (bound %d)", s3.LiteralBytes, changed, changed+slack+meta)
	}
	if s3.MatchedBytes == 0 || r3.Deleted == 0 || s3.Deleted != r3.Deleted {
		t.Fatalf("delta pass: send %+v receive %+v", s3, r3)
	}
	t.Logf("delta pass: %d changed bytes, %d literal, %d matched, %d wire out, %d wire in, %d deleted",
		changed, s3.LiteralBytes, s3.MatchedBytes, s3.BytesSent, s3.BytesReceived, r3.Deleted)
}

func TestKeepExtraneous(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dst, "extra"), []byte("x"), 0o644)
	_, r := syncTrees(t, src, dst, Options{Final: true}, Options{KeepExtraneous: true})
	if _, err := os.Stat(filepath.Join(dst, "extra")); err != nil || r.Deleted != 0 {
		t.Fatalf("extra file not kept: %v %+v", err, r)
	}
	_, r = syncTrees(t, src, dst, Options{Final: true}, Options{})
	if _, err := os.Stat(filepath.Join(dst, "extra")); !errors.Is(err, os.ErrNotExist) || r.Deleted != 1 {
		t.Fatalf("extra file not deleted: %v %+v", err, r)
	}
	requireEqualTrees(t, src, dst)
}

// TestSyncUnderWrites: a writer keeps changing the source during a live
// pass; once it stops, a final pass makes the trees equal.
func TestSyncUnderWrites(t *testing.T) {
	g := &gen{t: t, rng: rand.New(rand.NewPCG(3, 4)), ns: xattrNS(t)}
	src, dst := t.TempDir(), t.TempDir()
	for i := 0; i < 8; i++ {
		g.must(os.WriteFile(filepath.Join(src, "f"+string(rune('0'+i))), g.data(512<<10), 0o644))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var writes atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(5, 6))
		buf := make([]byte, 4096)
		for n := 0; !stop.Load() || n < 50; n++ {
			p := filepath.Join(src, "f"+string(rune('0'+rng.IntN(8))))
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				continue
			}
			for i := range buf {
				buf[i] = byte(rng.Uint32())
			}
			if rng.IntN(2) == 0 {
				f.Seek(0, 2)
			} else {
				f.Seek(int64(rng.IntN(512<<10)), 0)
			}
			f.Write(buf)
			f.Close()
			if n%20 == 0 {
				os.WriteFile(filepath.Join(src, "new"+string(rune('a'+rng.IntN(20)))), buf[:rng.IntN(4096)], 0o600)
			}
			writes.Add(1)
		}
	}()
	s1, _ := syncTrees(t, src, dst, Options{}, Options{})
	stop.Store(true)
	wg.Wait()
	t.Logf("live pass: %d writes during it, %d files unstable", writes.Load(), s1.Unstable)
	s2, _ := syncTrees(t, src, dst, Options{Final: true}, Options{})
	requireEqualTrees(t, src, dst)
	t.Logf("final pass: %d files, %d literal bytes, %d matched", s2.FilesTransferred, s2.LiteralBytes, s2.MatchedBytes)
}

// TestRacyFile: a file written within the racy window and then changed
// again with its size and mtime kept (a write in the same clock tick) is
// still sent by the next pass, because the live pass marked it.
func TestRacyFile(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	p := filepath.Join(src, "hot")
	if err := os.WriteFile(p, []byte("version one"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	unix.Lstat(p, &st)
	s, _ := syncTrees(t, src, dst, Options{}, Options{})
	if s.Unstable != 1 {
		t.Fatalf("recent file not marked unstable: %+v", s)
	}
	os.WriteFile(p, []byte("version two"), 0o644)
	ts := []unix.Timespec{st.Atim, st.Mtim}
	unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, 0) // same size, same mtime
	syncTrees(t, src, dst, Options{Final: true}, Options{})
	got, _ := os.ReadFile(filepath.Join(dst, "hot"))
	if string(got) != "version two" {
		t.Fatalf("racy change lost: %q", got)
	}
	requireEqualTrees(t, src, dst)
}

func TestSyncOverTCP(t *testing.T) {
	g := &gen{t: t, rng: rand.New(rand.NewPCG(7, 8))}
	src, dst := t.TempDir(), t.TempDir()
	g.must(os.WriteFile(filepath.Join(src, "big"), g.data(3<<20), 0o644))
	g.must(os.MkdirAll(filepath.Join(src, "a/b/c"), 0o755))
	g.must(os.WriteFile(filepath.Join(src, "a/b/c/small"), g.data(100), 0o600))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		_, err = Receive(ctx, dst, c, Options{})
		errc <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := Send(ctx, src, c, Options{Final: true}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	requireEqualTrees(t, src, dst)
}

func TestCancel(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Send(ctx, src, a, Options{})
	if !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Fatalf("cancelled send: %v", err)
	}
	_ = dst
}

// TestCopyLocal: Copy makes a directory equal to another on one host.
func TestCopyLocal(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a", "b", "f"), []byte("payload"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "extra"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := Copy(context.Background(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "a", "b", "f")); err != nil || string(b) != "payload" {
		t.Fatalf("copied file: %q %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "link")); err != nil || l != "/etc/passwd" {
		t.Fatalf("copied link: %q %v", l, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "extra")); !os.IsNotExist(err) {
		t.Fatalf("a file the source lacks survived: %v", err)
	}
	if st.FilesTransferred == 0 || st.Deleted != 1 {
		t.Errorf("stats %+v", st)
	}
}
