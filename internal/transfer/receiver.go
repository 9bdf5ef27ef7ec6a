package transfer

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent/internal/access"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/delta"
)

// Tree names, the first word of a transfer channel's extra data.
const (
	TreeVolume = "volume"
	TreeLayer  = "layer"
)

// Pass names, the second word of a transfer channel's extra data.
const (
	PassLive  = "live"
	PassFinal = "final"
)

// maxMessage bounds the failure text a receiver sends back.
const maxMessage = 1024

// Receiver is the target end of moves: it admits the pushes of the
// operations it expects and applies them to their trees. It implements
// access.Transfers. The zero value is not usable; see NewReceiver.
type Receiver struct {
	log *slog.Logger

	mu   sync.Mutex
	ops  map[string]*expectation
	busy map[string]chan struct{} // tree directories with a pass running; closed when it ends
	gen  uint64
}

var _ access.Transfers = (*Receiver)(nil)

// expectation is one operation the receiver expects a push for.
type expectation struct {
	op     string
	hash   [sha256.Size]byte
	trees  runtime.Trees
	gen    uint64
	ctx    context.Context // ends when the expectation is replaced or forgotten
	cancel context.CancelFunc
}

// NewReceiver returns a receiver expecting nothing (log nil: discarded).
func NewReceiver(log *slog.Logger) *Receiver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Receiver{
		log:  log.With("component", "transfer"),
		ops:  map[string]*expectation{},
		busy: map[string]chan struct{}{},
	}
}

// Expect registers the operation opID, whose token has the SHA-256
// tokenHash (hex), as allowed to push into trees. Calling it again with the
// same arguments changes nothing (agents converge by repeating
// themselves); with others it replaces the expectation, ending the passes
// running under the old one and the logins it admitted. A tokenHash that
// is not a hex SHA-256 admits nothing: the operation is forgotten and the
// mistake logged.
func (r *Receiver) Expect(opID, tokenHash string, trees runtime.Trees) {
	var h [sha256.Size]byte
	n, err := hex.Decode(h[:], []byte(tokenHash))
	if opID == "" || err != nil || n != sha256.Size || len(tokenHash) != 2*sha256.Size {
		r.log.Error("transfer expectation refused: bad operation id or token hash", "operation", opID)
		r.Forget(opID)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.ops[opID]; old != nil {
		if old.hash == h && old.trees == trees {
			return
		}
		old.cancel()
	}
	r.gen++
	ctx, cancel := context.WithCancel(context.Background())
	r.ops[opID] = &expectation{op: opID, hash: h, trees: trees, gen: r.gen, ctx: ctx, cancel: cancel}
}

// Forget stops expecting opID: later logins are refused and the passes
// running for it end.
func (r *Receiver) Forget(opID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.ops[opID]; old != nil {
		old.cancel()
		delete(r.ops, opID)
	}
}

// Authorize admits a login as the operation user with password its token.
// The token's hash is compared in constant time, and an unknown operation
// costs the same hash and comparison.
func (r *Receiver) Authorize(user string, password []byte) (string, bool) {
	sum := sha256.Sum256(password)
	r.mu.Lock()
	exp := r.ops[user]
	var want [sha256.Size]byte
	var gen uint64
	if exp != nil {
		want, gen = exp.hash, exp.gen
	}
	r.mu.Unlock()
	match := subtle.ConstantTimeCompare(sum[:], want[:]) == 1
	if exp == nil || !match {
		if exp == nil {
			r.log.Warn("transfer login refused: operation not expected", "operation", user)
		} else {
			r.log.Warn("transfer login refused: wrong token", "operation", user)
		}
		return "", false
	}
	return user + "#" + strconv.FormatUint(gen, 10), true
}

// lookup returns the expectation a grant was made for, if it still holds.
func (r *Receiver) lookup(grant string) *expectation {
	i := strings.LastIndexByte(grant, '#')
	if i < 0 {
		return nil
	}
	gen, err := strconv.ParseUint(grant[i+1:], 10, 64)
	if err != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	exp := r.ops[grant[:i]]
	if exp == nil || exp.gen != gen {
		return nil
	}
	return exp
}

// claimWait is how long a pass waits for one into the same tree to end
// before it is refused: a sender that cut a pass (its other tree failed)
// and pushes again at once finds the cut pass still unwinding here.
const claimWait = 3 * time.Second

// claim marks dir busy, waiting up to claimWait for a pass into it to end;
// false when one still runs then (or ctx ended).
func (r *Receiver) claim(ctx context.Context, dir string) bool {
	wait := time.NewTimer(claimWait)
	defer wait.Stop()
	for {
		r.mu.Lock()
		running, held := r.busy[dir]
		if !held {
			r.busy[dir] = make(chan struct{})
			r.mu.Unlock()
			return true
		}
		r.mu.Unlock()
		select {
		case <-running:
		case <-wait.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (r *Receiver) release(dir string) {
	r.mu.Lock()
	if running, held := r.busy[dir]; held {
		close(running)
		delete(r.busy, dir)
	}
	r.mu.Unlock()
}

// parseChannel reads a transfer channel's extra data: tree and pass.
func parseChannel(extra []byte) (tree, pass string, ok bool) {
	f := strings.Fields(string(extra))
	if len(f) != 2 || string(extra) != f[0]+" "+f[1] {
		return "", "", false
	}
	if f[0] != TreeVolume && f[0] != TreeLayer || f[1] != PassLive && f[1] != PassFinal {
		return "", "", false
	}
	return f[0], f[1], true
}

// ServeChannel applies one pass pushed on nch to the tree it names.
func (r *Receiver) ServeChannel(ctx context.Context, grant string, nch ssh.NewChannel) {
	exp := r.lookup(grant)
	if exp == nil {
		_ = nch.Reject(ssh.Prohibited, "the operation is no longer expected here")
		return
	}
	log := r.log.With("operation", exp.op)
	tree, pass, ok := parseChannel(nch.ExtraData())
	if !ok {
		log.Warn("transfer refused: bad channel data", "data", fmt.Sprintf("%q", nch.ExtraData()))
		_ = nch.Reject(ssh.Prohibited, `channel data must be "volume|layer live|final"`)
		return
	}
	dir := exp.trees.Volume
	if tree == TreeLayer {
		dir = exp.trees.Layer
	}
	if dir == "" {
		_ = nch.Reject(ssh.Prohibited, "no "+tree+" tree is expected for this operation")
		return
	}
	if !r.claim(ctx, dir) {
		log.Warn("transfer refused: a pass into the tree is already running", "tree", tree)
		_ = nch.Reject(ssh.ResourceShortage, "a pass into the "+tree+" of this operation is already running")
		return
	}
	// Released before the answer, so that the sender's next pass, which
	// may start as soon as it has the answer, finds the tree free.
	release := sync.OnceFunc(func() { r.release(dir) })
	defer release()

	raw, reqs, err := nch.Accept()
	if err != nil {
		log.Warn("transfer channel accept failed", "err", err)
		return
	}
	go ssh.DiscardRequests(reqs)
	ch := &replyChannel{Channel: raw, why: func() string {
		if exp.ctx.Err() != nil {
			return "the target stopped expecting this operation (replaced or forgotten)"
		}
		return "the pass was cancelled at the target"
	}}
	defer ch.Close()

	// The pass ends with the connection or with the expectation.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(exp.ctx, cancel)
	defer stop()

	start := time.Now()
	st, err := delta.Receive(ctx, dir, ch, delta.Options{Logger: log})
	if err != nil {
		if exp.ctx.Err() != nil {
			err = fmt.Errorf("the target stopped expecting this operation: %w", err)
		}
		log.Warn("transfer pass failed", "tree", tree, "pass", pass, "err", err)
		release()
		ch.reply(1, err.Error(), true)
		return
	}
	log.Info("transfer pass applied", "tree", tree, "pass", pass,
		"files", st.FilesSeen, "transferred", st.FilesTransferred, "deleted", st.Deleted,
		"bytes", st.BytesReceived, "errors", st.Errors, "took", time.Since(start).Round(time.Millisecond).String())
	release()
	ch.reply(0, "", true)
}

// replyWait bounds how long a failure message may wait for the sender to
// make room for it (it may have stopped reading).
const replyWait = 2 * time.Second

// replyChannel is a transfer channel that answers once: the failure
// message on the extended data, then exit-status. Close, which is how
// delta.Receive interrupts a cancelled pass, answers first too, so a
// sender learns why its pass was cut.
type replyChannel struct {
	ssh.Channel
	why  func() string
	once sync.Once
}

// reply answers once. Only the answer after delta.Receive returned half
// closes the channel: CloseWrite must not race the writes of a Receive
// still running, which the interrupting Close may.
func (c *replyChannel) reply(status uint32, msg string, closeWrite bool) {
	c.once.Do(func() {
		if msg != "" {
			if len(msg) > maxMessage {
				msg = msg[:maxMessage]
			}
			written := make(chan struct{})
			go func() {
				_, _ = c.Channel.Stderr().Write([]byte(msg))
				close(written)
			}()
			t := time.NewTimer(replyWait)
			select {
			case <-written:
			case <-t.C:
			}
			t.Stop()
		}
		var payload [4]byte
		binary.BigEndian.PutUint32(payload[:], status)
		_, _ = c.Channel.SendRequest("exit-status", false, payload[:])
		if closeWrite {
			_ = c.Channel.CloseWrite()
		}
	})
}

func (c *replyChannel) Close() error {
	c.reply(1, c.why(), false)
	return c.Channel.Close()
}
