//go:build linux

package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/access"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/transfer"
)

// A full pass copies everything; the next pass moves only what changed,
// deletes what the source deleted, and leaves the target equal.
func TestFullThenIncremental(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, nil)
	src, dst := trees(t), trees(t)
	data := populate(t, src, 1)
	op, token := tg.expect(dst)

	full := push(t, tg.request(op, token, src, false))
	requireEqual(t, src.Volume, dst.Volume)
	requireEqual(t, src.Layer, dst.Layer)
	if full.Volume.LiteralBytes+full.Layer.LiteralBytes < data {
		t.Errorf("full pass sent %d literal bytes for %d bytes of data", full.Volume.LiteralBytes+full.Layer.LiteralBytes, data)
	}
	if full.BytesSent != full.Volume.BytesSent+full.Layer.BytesSent || full.BytesSent < data || full.WireBytes < full.BytesSent {
		t.Errorf("full pass totals: sent %d (volume %d + layer %d), wire %d, data %d",
			full.BytesSent, full.Volume.BytesSent, full.Layer.BytesSent, full.WireBytes, data)
	}
	if full.FilesChanged < 20 {
		t.Errorf("full pass changed %d files, want them all", full.FilesChanged)
	}

	// The instance changes: 4 KiB rewritten inside the 3 MiB file, a
	// shard deleted, a file added, a mode changed, a symlink retargeted.
	g := newGen(t, 2)
	f, err := os.OpenFile(filepath.Join(src.Volume, "model", "weights.bin"), os.O_RDWR, 0)
	g.must(err)
	_, err = f.WriteAt(g.data(4096), 1<<20)
	g.must(err)
	g.must(f.Close())
	g.must(os.Remove(filepath.Join(src.Volume, "data", "shard-03.bin")))
	g.write(filepath.Join(src.Volume, "data", "new.bin"), 5000, 0o644)
	g.must(os.Chmod(filepath.Join(src.Volume, "bin", "run.sh"), 0o700))
	g.must(os.Remove(filepath.Join(src.Volume, "latest")))
	g.must(os.Symlink("data/new.bin", filepath.Join(src.Volume, "latest")))

	inc := push(t, tg.request(op, token, src, true))
	requireEqual(t, src.Volume, dst.Volume)
	requireEqual(t, src.Layer, dst.Layer)
	if inc.Volume.FilesTransferred != 2 || inc.Volume.Deleted != 1 || inc.Layer.FilesTransferred != 0 || inc.Layer.Deleted != 0 {
		t.Errorf("incremental pass: volume %d sent %d deleted, layer %d sent %d deleted; want 2/1 and 0/0",
			inc.Volume.FilesTransferred, inc.Volume.Deleted, inc.Layer.FilesTransferred, inc.Layer.Deleted)
	}
	if inc.FilesChanged != 3 {
		t.Errorf("FilesChanged = %d, want 3", inc.FilesChanged)
	}
	// 4 KiB + 5000 bytes of new data, plus lists and block sums: far
	// below the 3 MiB file it sits in.
	if inc.Volume.LiteralBytes > 64<<10 || inc.BytesSent > 256<<10 {
		t.Errorf("incremental pass sent %d literal bytes, %d in all: want only what changed", inc.Volume.LiteralBytes, inc.BytesSent)
	}
	// The target audited both passes of both trees, all successful.
	var ok int
	for _, e := range tg.eventsOf(access.KindTransfer) {
		if !e.End.IsZero() {
			if e.Instance != op || e.ExitCode != 0 || e.Err != "" || e.BytesIn == 0 {
				t.Errorf("audit of a pass = %+v", e)
			}
			ok++
		}
	}
	if ok != 4 {
		t.Errorf("%d passes audited as ended, want 4", ok)
	}
}

// A wrong token, a wrong host key, an unknown or forgotten operation and a
// target without transfers are refused with an error that says so, and
// nothing is written.
func TestRefusals(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, nil)
	src, dst := trees(t), trees(t)
	populate(t, src, 3)
	op, token := tg.expect(dst)
	other := newTarget(t, nil) // another agent, another host key
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	check := func(name string, req transfer.PushRequest, code gpurent.Code, says string) {
		t.Helper()
		st, err := transfer.Push(ctx, req)
		if err == nil {
			t.Errorf("%s: Push succeeded", name)
			return
		}
		if !gpurent.IsCode(err, code) || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: Push = %v (code %s); want code %s saying %q", name, err, gpurent.ErrorCode(err), code, says)
		}
		if st.BytesSent != 0 {
			t.Errorf("%s: %d bytes sent", name, st.BytesSent)
		}
	}

	req := tg.request(op, token, src, false)
	req.Token = strings.Repeat("0", len(token))
	check("wrong token", req, gpurent.CodeUnauthorized, "refused the login of operation "+op)

	req = tg.request(op, token, src, false)
	req.HostKey = other.hostKey
	check("wrong host key", req, gpurent.CodeUnauthorized, "presented host key")

	req = tg.request("op_unknown", token, src, false)
	check("unknown operation", req, gpurent.CodeUnauthorized, "refused the login of operation op_unknown")

	req = tg.request(op, token, src, false)
	req.HostKey = "ssh-ed25519 not-base64"
	check("malformed host key", req, gpurent.CodeInvalid, "host key")

	req = tg.request(op, "", src, false)
	check("no token", req, gpurent.CodeInvalid, "token")

	// An access server without transfers offers no password login.
	plain := newTarget(t, func(c *access.Config) { c.Transfers = nil })
	req = plain.request(op, token, src, false)
	check("no transfers", req, gpurent.CodeUnavailable, "does not accept transfer logins")

	// Nothing listens: the dial fails.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	req = tg.request(op, token, src, false)
	req.Addr = closed
	check("nothing listening", req, gpurent.CodeUnavailable, "dial the target "+closed)

	requireEmpty(t, dst.Volume)
	requireEmpty(t, dst.Layer)

	// The right token works, until the operation is forgotten.
	push(t, tg.request(op, token, src, false))
	requireEqual(t, src.Volume, dst.Volume)
	tg.recv.Forget(op)
	check("forgotten operation", tg.request(op, token, src, false), gpurent.CodeUnauthorized, "refused the login")

	// Refused logins are audited as transfers with the reason.
	var refused int
	for _, e := range tg.eventsOf(access.KindTransfer) {
		if e.Err != "" && e.KeyFingerprint == "" {
			refused++
		}
	}
	if refused < 3 {
		t.Errorf("%d refused transfer logins audited, want at least 3 (wrong token, unknown, forgotten)", refused)
	}
}

// dialTransfer logs in as a transfer client by hand.
func dialTransfer(t *testing.T, tg *target, op, token string) *ssh.Client {
	t.Helper()
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(tg.hostKey))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", tg.addr, &ssh.ClientConfig{
		User: op, Auth: []ssh.AuthMethod{ssh.Password(token)},
		HostKeyCallback: ssh.FixedHostKey(key), Timeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatalf("transfer login: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A transfer login can open transfer channels and nothing else: no
// session, no forward, no malformed or misnamed transfer.
func TestTransferLoginIsConfined(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, nil)
	dst := trees(t)
	op, token := tg.expect(runtime.Trees{Volume: dst.Volume})
	c := dialTransfer(t, tg, op, token)

	if s, err := c.NewSession(); err == nil {
		s.Close()
		t.Errorf("a transfer login opened a session")
	}
	if nc, err := c.Dial("tcp", "127.0.0.1:22"); err == nil {
		nc.Close()
		t.Errorf("a transfer login opened a direct-tcpip channel")
	}
	if ok, _, err := c.SendRequest("tcpip-forward", true, ssh.Marshal(struct {
		Addr string
		Port uint32
	}{"127.0.0.1", 0})); err != nil || ok {
		t.Errorf("tcpip-forward on a transfer login = %v, %v; want refused", ok, err)
	}
	for _, extra := range []string{"", "volume", "volume live extra", "../volume live", "volume  live", "layer live", "volume later"} {
		ch, _, err := c.OpenChannel(access.TransferChannelType, []byte(extra))
		var oce *ssh.OpenChannelError
		if err == nil {
			ch.Close()
			t.Errorf("transfer channel %q accepted", extra)
		} else if !errors.As(err, &oce) || oce.Reason != ssh.Prohibited {
			t.Errorf("transfer channel %q: %v, want prohibited", extra, err)
		}
	}
	requireEmpty(t, dst.Volume)
	for _, kind := range []string{"session", "direct-tcpip"} {
		found := false
		for _, e := range tg.eventsOf(access.KindTransfer) {
			if e.Command == kind && e.Err != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("the refused %s channel was not audited", kind)
		}
	}
}

// One pass per tree at a time: a second push while one runs is refused,
// and works once the first is over.
func TestConcurrentPassRefused(t *testing.T) {
	t.Parallel()
	h := holdVolume(t)
	tg, src, dst, op, token := h.tg, h.src, h.dst, h.op, h.token
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := transfer.Push(ctx, tg.request(op, token, src, false))
	if !gpurent.IsCode(err, gpurent.CodeConflict) || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second pass = %v (code %s); want conflict, already running", err, gpurent.ErrorCode(err))
	}
	h.end()
	// The holder's pass ends once its channel does; then a push goes
	// through.
	deadline := time.Now().Add(time.Minute)
	for {
		_, err = transfer.Push(ctx, tg.request(op, token, src, true))
		if err == nil || !gpurent.IsCode(err, gpurent.CodeConflict) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("push after the first pass ended: %v", err)
	}
	requireEqual(t, src.Volume, dst.Volume)
	requireEqual(t, src.Layer, dst.Layer)
}

// A pass that arrives while one into the same tree is ending (its sender
// cut it and pushes again at once) waits for it instead of being refused.
func TestPassWaitsForOneEnding(t *testing.T) {
	t.Parallel()
	h := holdVolume(t)
	// The holder goes half a second into the second push's wait.
	go func() {
		time.Sleep(500 * time.Millisecond)
		h.end()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := transfer.Push(ctx, h.tg.request(h.op, h.token, h.src, true)); err != nil {
		t.Fatalf("a push while the other pass ended: %v", err)
	}
	requireEqual(t, h.src.Volume, h.dst.Volume)
	requireEqual(t, h.src.Layer, h.dst.Layer)
}

// volumeHeld is a target expecting a push of src into dst, whose volume a
// pass holds: one that opened its channel and sent nothing; end ends it.
type volumeHeld struct {
	tg        *target
	src, dst  runtime.Trees
	op, token string
	end       func()
}

func holdVolume(t *testing.T) volumeHeld {
	t.Helper()
	h := volumeHeld{tg: newTarget(t, nil), src: trees(t), dst: trees(t)}
	populate(t, h.src, 4)
	h.op, h.token = h.tg.expect(h.dst)
	c := dialTransfer(t, h.tg, h.op, h.token)
	ch, _, err := c.OpenChannel(access.TransferChannelType, []byte("volume live"))
	if err != nil {
		t.Fatalf("open the first pass: %v", err)
	}
	h.end = func() {
		ch.Close()
		c.Close()
	}
	return h
}

// writer changes a tree the way a running instance does, until stopped:
// whole-file rewrites, in-place block writes, appends, new and deleted
// files, renames, mode changes, symlink swaps, new and removed
// directories.
type writer struct {
	root string
	g    *gen
	ops  int
	stop chan struct{}
	done chan struct{}
	err  error
}

func startWriter(t *testing.T, root string, seed uint64) *writer {
	w := &writer{root: root, g: newGen(t, seed), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			if err := w.step(); err != nil {
				w.err = err
				return
			}
			w.ops++
		}
	}()
	return w
}

// halt stops the writer ("the instance stopped") and waits for it.
func (w *writer) halt(t *testing.T) {
	close(w.stop)
	<-w.done
	if w.err != nil {
		t.Fatalf("writer: %v", w.err)
	}
	t.Logf("writer made %d changes", w.ops)
}

func (w *writer) step() error {
	rng := w.g.rng
	dir := filepath.Join(w.root, "live", fmt.Sprintf("d%d", rng.IntN(3)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := filepath.Join(dir, fmt.Sprintf("f%d", rng.IntN(12)))
	switch op := rng.IntN(9); op {
	case 0, 1: // rewrite or create
		return os.WriteFile(name, w.g.data(rng.IntN(200<<10)), 0o644)
	case 2: // in-place block write
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteAt(w.g.data(4096), int64(rng.IntN(256<<10)))
		return errors.Join(err, f.Close())
	case 3: // append
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		_, err = f.Write(w.g.data(1 + rng.IntN(3000)))
		return errors.Join(err, f.Close())
	case 4: // delete
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	case 5: // rename over another
		other := filepath.Join(dir, fmt.Sprintf("f%d", rng.IntN(12)))
		if err := os.Rename(name, other); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	case 6: // mode change
		if err := os.Chmod(name, os.FileMode(0o600|rng.IntN(0o100))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	case 7: // symlink swap
		link := filepath.Join(dir, "link")
		_ = os.Remove(link)
		return os.Symlink(fmt.Sprintf("f%d", rng.IntN(12)), link)
	case 8: // a directory comes or goes
		sub := filepath.Join(dir, "sub")
		if rng.IntN(2) == 0 {
			return os.RemoveAll(sub)
		}
		if err := os.MkdirAll(sub, 0o750); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(sub, "x"), w.g.data(100), 0o644)
	}
	return nil
}

// Live passes while the instance keeps writing, then the instance stops
// and a final pass makes the target exactly the source: every file's
// content, mode, owner, mtime, symlinks and deletions.
func TestCopyUnderWrites(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, nil)
	src, dst := trees(t), trees(t)
	populate(t, src, 5)
	op, token := tg.expect(dst)

	wv := startWriter(t, src.Volume, 6)
	wl := startWriter(t, src.Layer, 7)
	var changed int64
	for i := range 3 {
		st := push(t, tg.request(op, token, src, false))
		changed += st.FilesChanged
		t.Logf("live pass %d: %d files changed, %d bytes sent, unstable %d+%d", i+1, st.FilesChanged, st.BytesSent, st.Volume.Unstable, st.Layer.Unstable)
	}
	wv.halt(t)
	wl.halt(t)
	if wv.ops == 0 || wl.ops == 0 {
		t.Fatalf("the writers made no change during the live passes")
	}
	final := push(t, tg.request(op, token, src, true))
	t.Logf("final pass: %d files changed, %d bytes sent", final.FilesChanged, final.BytesSent)
	requireEqual(t, src.Volume, dst.Volume)
	requireEqual(t, src.Layer, dst.Layer)
	// Once stopped, a pass changes nothing.
	again := push(t, tg.request(op, token, src, true))
	if again.FilesChanged != 0 {
		t.Errorf("a pass after the final pass changed %d files", again.FilesChanged)
	}
}

// A target killed in the middle of a copy makes Push fail cleanly; a later
// push to a new target completes. Cancelling the push's context ends it
// promptly too.
func TestTargetKilledMidCopy(t *testing.T) {
	t.Parallel()
	src, dst := trees(t), trees(t)
	populate(t, src, 8)
	g := newGen(t, 9)
	g.write(filepath.Join(src.Volume, "big.bin"), 48<<20, 0o644)
	ageTree(t, src.Volume, time.Now().Add(-time.Hour))

	tg := newTarget(t, nil)
	op, token := tg.expect(dst)
	tg.readTrigger = 8 << 20
	tg.onRead = tg.kill
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := transfer.Push(ctx, tg.request(op, token, src, false))
	if err == nil {
		t.Fatalf("Push to a target killed mid-copy succeeded")
	}
	if !gpurent.IsCode(err, gpurent.CodeUnavailable) || !strings.Contains(err.Error(), "transfer: push") {
		t.Errorf("Push to a killed target = %v (code %s); want unavailable, naming the push", err, gpurent.ErrorCode(err))
	}
	if !tg.fired.Load() {
		t.Errorf("the target was not killed mid-copy")
	}
	t.Logf("killed mid-copy: %v", err)

	// A caller that gives up mid-copy.
	tg2 := newTarget(t, nil)
	op2, token2 := tg2.expect(dst)
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	tg2.readTrigger = 8 << 20
	tg2.onRead = ccancel
	_, err = transfer.Push(cctx, tg2.request(op2, token2, src, false))
	if !gpurent.IsCode(err, gpurent.CodeUnavailable) || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("cancelled Push = %v; want unavailable, cancelled", err)
	}

	// A new target agent, same destination directories (the target
	// agent restarted), finishes the copy.
	tg3 := newTarget(t, nil)
	op3, token3 := tg3.expect(dst)
	st := push(t, tg3.request(op3, token3, src, true))
	requireEqual(t, src.Volume, dst.Volume)
	requireEqual(t, src.Layer, dst.Layer)
	t.Logf("after the failures: %d files, %d bytes sent (%d matched)", st.FilesChanged, st.BytesSent, st.Volume.MatchedBytes)
}

// Expect is idempotent, and replacing or forgetting an operation ends
// the passes running under it.
func TestExpectReplaceEndsPasses(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, nil)
	dst := trees(t)
	op, token := tg.expect(dst)
	c := dialTransfer(t, tg, op, token)
	// The same expectation again keeps the login valid.
	tg.recv.Expect(op, tokenHash(token), dst)
	ch, reqs, err := c.OpenChannel(access.TransferChannelType, []byte("layer live"))
	if err != nil {
		t.Fatalf("open a pass after a repeated Expect: %v", err)
	}
	// A new token ends the pass: the receiver reports the failure and
	// closes the channel.
	var wg sync.WaitGroup
	wg.Add(1)
	var status uint32 = 99
	go func() {
		defer wg.Done()
		for q := range reqs {
			if q.Type == "exit-status" && len(q.Payload) == 4 {
				status = uint32(q.Payload[3])
			}
		}
	}()
	tg.recv.Expect(op, tokenHash("another token"), dst)
	wg.Wait()
	ch.Close()
	if status != 1 {
		t.Errorf("exit-status of a pass whose operation was replaced = %d, want 1", status)
	}
	// The old login's grant is void.
	if _, _, err := c.OpenChannel(access.TransferChannelType, []byte("volume live")); err == nil {
		t.Errorf("a login of the replaced expectation opened a pass")
	}
}

// A pass the target cannot apply fails with the target's reason; a push
// without a layer sends the volume alone.
func TestTargetFailureIsReported(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, nil)
	src, dst := trees(t), trees(t)
	populate(t, src, 10)
	missing := runtime.Trees{Volume: dst.Volume, Layer: filepath.Join(dst.Layer, "not-there")}
	op, token := tg.expect(missing)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := transfer.Push(ctx, tg.request(op, token, src, false))
	if err == nil || !strings.Contains(err.Error(), "push layer") || !strings.Contains(err.Error(), "the target says") ||
		!strings.Contains(err.Error(), "destination root") {
		t.Fatalf("push into a missing layer directory = %v; want the target's reason", err)
	}
	t.Logf("push into a missing directory: %v", err)

	req := tg.request(op, token, runtime.Trees{Volume: src.Volume}, true)
	st := push(t, req)
	requireEqual(t, src.Volume, dst.Volume)
	if st.Layer.BytesSent != 0 || st.Volume.FilesTransferred == 0 {
		t.Errorf("volume-only push: %+v", st)
	}
}
