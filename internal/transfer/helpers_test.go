//go:build linux

package transfer_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/access"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/transfer"
)

// target is one target agent's access server on loopback, with a
// Receiver as its Transfers, over the real Docker runtime (which the
// access server needs; the transfers do not use it).
type target struct {
	t        testing.TB
	recv     *transfer.Receiver
	srv      *access.Server
	addr     string
	hostKey  string // authorized_keys form
	stop     context.CancelFunc
	served   chan error
	stopOnce sync.Once

	// readBytes counts what the server read from its connections;
	// onRead, when set, is called (once) when it passes readTrigger.
	readBytes   atomic.Int64
	readTrigger int64
	onRead      func()
	fired       atomic.Bool

	mu     sync.Mutex
	events []access.Event
}

// newTarget starts a target; tweak may change the access configuration.
func newTarget(t testing.TB, tweak func(*access.Config)) *target {
	t.Helper()
	dockertest.Require(t)
	rt, err := docker.New(context.Background(), docker.Config{Network: "none", InitBinary: dockertest.InitBinary(t), Scope: "transfer-" + dockertest.NewInstanceID()})
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	hk, err := access.LoadOrCreateHostKey(filepath.Join(t.TempDir(), "host_key"))
	if err != nil {
		t.Fatal(err)
	}
	log := testLogger(t)
	tg := &target{t: t, recv: transfer.NewReceiver(log)}
	cfg := access.Config{
		HostKey:    hk,
		Runtime:    rt,
		Logger:     log,
		SFTPHelper: []string{"/bin/false"},
		Transfers:  tg.recv,
		Audit: func(e access.Event) {
			tg.mu.Lock()
			tg.events = append(tg.events, e)
			tg.mu.Unlock()
		},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	tg.srv, err = access.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tg.addr = ln.Addr().String()
	tg.hostKey = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hk.PublicKey())))
	ctx, stop := context.WithCancel(context.Background())
	tg.stop = stop
	tg.served = make(chan error, 1)
	go func() { tg.served <- tg.srv.Serve(ctx, &countingListener{Listener: ln, tg: tg}) }()
	t.Cleanup(tg.kill)
	return tg
}

// kill stops the server: its listener and every connection close, as when
// the target agent dies. It waits for Serve to return.
func (tg *target) kill() {
	tg.stopOnce.Do(func() {
		tg.stop()
		select {
		case err := <-tg.served:
			if err != nil {
				tg.t.Errorf("Serve: %v", err)
			}
		case <-time.After(time.Minute):
			tg.t.Errorf("Serve did not return after its context ended")
		}
	})
}

// eventsOf returns the audit events of one kind so far.
func (tg *target) eventsOf(kind access.Kind) []access.Event {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	var out []access.Event
	for _, e := range tg.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// expect registers a fresh operation with trees and returns its id and
// token.
func (tg *target) expect(trees runtime.Trees) (op, token string) {
	op = gpurent.NewID("op")
	var b [32]byte
	_, _ = rand.Read(b[:])
	token = hex.EncodeToString(b[:])
	tg.recv.Expect(op, tokenHash(token), trees)
	return op, token
}

func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// request is a push of src to tg for op.
func (tg *target) request(op, token string, src runtime.Trees, final bool) transfer.PushRequest {
	return transfer.PushRequest{
		Addr: tg.addr, HostKey: tg.hostKey, OperationID: op, Token: token,
		Trees: src, Final: final, Logger: testLogger(tg.t),
	}
}

// countingListener counts the bytes the server reads, to kill or cancel
// at a known point of a copy.
type countingListener struct {
	net.Listener
	tg *target
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, tg: l.tg}, nil
}

type countingConn struct {
	net.Conn
	tg *target
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	tg := c.tg
	if total := tg.readBytes.Add(int64(n)); tg.onRead != nil && tg.readTrigger > 0 && total >= tg.readTrigger {
		if tg.fired.CompareAndSwap(false, true) {
			go tg.onRead()
		}
	}
	return n, err
}

// push runs a push bounded in time (a 10 GB benchmark pass included) and
// fails the test on error.
func push(t testing.TB, req transfer.PushRequest) transfer.PushStats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	st, err := transfer.Push(ctx, req)
	if err != nil {
		t.Fatalf("Push (final=%v): %v", req.Final, err)
	}
	return st
}

// trees makes a source or target pair of directories under a temp dir.
func trees(t testing.TB) runtime.Trees {
	t.Helper()
	d := t.TempDir()
	tr := runtime.Trees{Volume: filepath.Join(d, "volume"), Layer: filepath.Join(d, "layer")}
	for _, p := range []string{tr.Volume, tr.Layer} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// gen writes random content.
type gen struct {
	t   testing.TB
	rng *mrand.Rand
}

func newGen(t testing.TB, seed uint64) *gen {
	return &gen{t: t, rng: mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (g *gen) data(n int) []byte {
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(g.rng.Uint32())
	}
	b := make([]byte, n)
	_, _ = mrand.NewChaCha8(seed).Read(b)
	return b
}

func (g *gen) must(err error) {
	g.t.Helper()
	if err != nil {
		g.t.Fatal(err)
	}
}

// write writes a file with random content of size n.
func (g *gen) write(path string, n int, perm os.FileMode) {
	g.t.Helper()
	g.must(os.MkdirAll(filepath.Dir(path), 0o755))
	g.must(os.WriteFile(path, g.data(n), perm))
	g.must(os.Chmod(path, perm))
}

// populate fills a volume and a layer with a mix of what instances hold:
// files of several sizes and modes, nested directories, an empty file and
// directory, symlinks (one dangling, one absolute), a hard link, and in
// the layer an overlayfs whiteout. Every mtime is an hour old, as data at
// rest is. It returns the data bytes written.
func populate(t testing.TB, src runtime.Trees, seed uint64) int64 {
	t.Helper()
	g := newGen(t, seed)
	var total int64
	add := func(p string, n int, perm os.FileMode) {
		g.write(p, n, perm)
		total += int64(n)
	}
	v := src.Volume
	add(filepath.Join(v, "model", "weights.bin"), 3<<20+17, 0o644)
	add(filepath.Join(v, "model", "config.json"), 900, 0o600)
	for i := range 12 {
		add(filepath.Join(v, "data", fmt.Sprintf("shard-%02d.bin", i)), 64<<10+g.rng.IntN(256<<10), 0o644)
	}
	add(filepath.Join(v, "bin", "run.sh"), 300, 0o755)
	add(filepath.Join(v, "deep", "a", "b", "c", "d", "leaf.txt"), 10, 0o640)
	g.must(os.WriteFile(filepath.Join(v, "empty"), nil, 0o644))
	g.must(os.MkdirAll(filepath.Join(v, "emptydir"), 0o700))
	g.must(os.Symlink("model/weights.bin", filepath.Join(v, "latest")))
	g.must(os.Symlink("/etc/passwd", filepath.Join(v, "abs-link")))
	g.must(os.Symlink("nowhere/at/all", filepath.Join(v, "dangling")))
	g.must(os.Link(filepath.Join(v, "model", "config.json"), filepath.Join(v, "config-hardlink.json")))

	l := src.Layer
	add(filepath.Join(l, "usr", "local", "lib", "python3", "site.py"), 40<<10, 0o644)
	add(filepath.Join(l, "root", ".bash_history"), 2000, 0o600)
	add(filepath.Join(l, "etc", "motd"), 100, 0o644)
	g.must(syscall.Mknod(filepath.Join(l, "etc", "deleted-by-instance"), syscall.S_IFCHR, 0))
	g.must(os.Symlink("../usr/local", filepath.Join(l, "etc", "local-link")))

	old := time.Now().Add(-time.Hour)
	for _, root := range []string{v, l} {
		ageTree(t, root, old)
	}
	return total
}

// ageTree sets every mtime under root to at (symlinks included).
func ageTree(t testing.TB, root string, at time.Time) {
	t.Helper()
	ts := []unix.Timespec{unix.NsecToTimespec(at.UnixNano()), unix.NsecToTimespec(at.UnixNano())}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// digest describes a tree exactly: per path, kind, permission bits,
// owner, size, link count, content hash, symlink target, device number
// and, for regular files and symlinks, mtime.
func digest(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		desc := fmt.Sprintf("%v uid=%d gid=%d", fi.Mode(), st.Uid, st.Gid)
		switch {
		case fi.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" size=%d nlink=%d sha=%x mtime=%d", fi.Size(), st.Nlink, h.Sum(nil)[:8], fi.ModTime().UnixNano())
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" -> %s mtime=%d", target, fi.ModTime().UnixNano())
		case fi.Mode()&fs.ModeDevice != 0:
			desc += fmt.Sprintf(" rdev=%d", st.Rdev)
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatalf("digest %s: %v", root, err)
	}
	return out
}

// requireEqual fails the test unless the two trees are exactly alike.
func requireEqual(t testing.TB, src, dst string) {
	t.Helper()
	a, b := digest(t, src), digest(t, dst)
	var diffs []string
	for p, da := range a {
		if db, ok := b[p]; !ok {
			diffs = append(diffs, "missing at the target: "+p+" ("+da+")")
		} else if da != db {
			diffs = append(diffs, fmt.Sprintf("differs: %s\n    source %s\n    target %s", p, da, db))
		}
	}
	for p, db := range b {
		if _, ok := a[p]; !ok {
			diffs = append(diffs, "extra at the target: "+p+" ("+db+")")
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		if len(diffs) > 20 {
			diffs = append(diffs[:20], fmt.Sprintf("... and %d more", len(diffs)-20))
		}
		t.Fatalf("target %s differs from source %s:\n  %s", dst, src, strings.Join(diffs, "\n  "))
	}
}

// requireEmpty fails unless dir holds nothing.
func requireEmpty(t testing.TB, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Fatalf("%s should be untouched, holds %d entries (first %s)", dir, len(ents), ents[0].Name())
	}
}

// testLogger sends logs to the test's log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
