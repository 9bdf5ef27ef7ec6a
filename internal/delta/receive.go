package delta

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"sync"

	"github.com/gpurent/gpurent"
	"golang.org/x/sys/unix"
)

// Receive applies what the Send at the other end of conn sends to the tree
// under root, which must exist and be a directory. Entries that cannot be
// written are skipped and counted in Stats.Errors; stream and protocol
// failures, and paths that would leave root, end the pass with an error.
func Receive(ctx context.Context, root string, conn io.ReadWriter, opts Options) (Stats, error) {
	var st Stats
	t, err := openTree(root)
	if err != nil {
		return st, gpurent.WrapError(gpurent.CodeInvalid, err, "delta: cannot open the destination root")
	}
	defer t.close()
	stop := watch(ctx, conn)
	defer stop()
	r := &receiver{ctx: ctx, root: root, t: t, opts: opts, st: &st, conn: conn,
		w: newFrameWriter(conn), r: newFrameReader(conn), pending: map[int]request{}, dirty: map[string]bool{}}
	err = r.run()
	st.BytesSent, st.BytesReceived = r.w.n, r.r.n
	if err != nil && ctx.Err() != nil {
		err = gpurent.WrapError(gpurent.CodeUnavailable, ctx.Err(), "delta: receive cancelled")
	}
	return st, err
}

type receiver struct {
	ctx  context.Context
	root string
	t    *tree
	opts Options
	st   *Stats
	conn io.ReadWriter
	w    *frameWriter
	r    *frameReader

	entries []entry
	byPath  map[string]int
	failed  []bool // entries left alone because of an error
	sent    []bool // regular files rebuilt in this pass
	dirty   map[string]bool

	mu      sync.Mutex
	pending map[int]request // requested and not answered yet

	localErrors int64
	out         *bufio.Writer
	hash        hash.Hash
	copyBuf     []byte
}

func (r *receiver) fail(i int, err error) {
	if i >= 0 {
		r.failed[i] = true
	}
	r.localErrors++
	r.st.fail(r.opts.Logger, err)
}

func (r *receiver) run() error {
	v, err := r.r.readHello("sender")
	if err != nil {
		return err
	}
	if err := r.w.write(msgHello, encodeHello()); err != nil {
		return err
	}
	if err := r.w.flush(); err != nil {
		return err
	}
	if v != Version {
		return gpurent.Errorf(gpurent.CodeInvalid, "delta: protocol version mismatch: this receiver speaks %d, the sender %d", Version, v)
	}
	if err := r.list(); err != nil {
		return err
	}
	r.failed = make([]bool, len(r.entries))
	r.sent = make([]bool, len(r.entries))
	r.st.FilesSeen = int64(len(r.entries))
	if err := r.structure(); err != nil {
		return err
	}
	if err := r.transfer(); err != nil {
		return err
	}
	if err := r.finish(); err != nil {
		return err
	}
	c := doneCounts{Deleted: r.st.Deleted, Errors: r.localErrors, XattrsSkipped: r.st.XattrsSkipped, Transferred: r.st.FilesTransferred}
	if err := r.w.write(msgDone, encodeDone(c)); err != nil {
		return err
	}
	return r.w.flush()
}

// list reads the file list. A bad entry does not stop the reading, so that
// the sender, which may be blocked writing, gets a clean abort at the end.
func (r *receiver) list() error {
	r.byPath = map[string]int{}
	var bad error
	for {
		typ, p, err := r.r.read()
		if err != nil {
			return err
		}
		switch typ {
		case msgEntry:
			if bad != nil {
				continue
			}
			x, err := decodeEntry(p, len(r.entries))
			if err == nil {
				err = r.checkEntry(&x)
			}
			if err != nil {
				bad = err
				continue
			}
			r.byPath[x.Path] = len(r.entries)
			r.entries = append(r.entries, x)
		case msgListEnd:
			n, err := decodeListEnd(p)
			if err != nil {
				return err
			}
			if bad == nil && len(r.entries) == 0 {
				bad = errMalformed("empty file list")
			}
			if bad != nil {
				r.w.write(msgAbort, encodeText(gpurent.ErrorMessage(bad)))
				r.w.flush()
				return bad
			}
			r.st.Errors += n
			return nil
		case msgAbort:
			return peerAbort("sender", p)
		default:
			return errMalformed("unexpected message %d in the file list", typ)
		}
	}
}

// checkEntry holds the list to a tree: the root first, every other path
// once and under a directory listed before it, hard links to earlier files.
func (r *receiver) checkEntry(x *entry) error {
	if len(r.entries) == 0 {
		if x.Path != "." {
			return errMalformed("the list does not start with the root")
		}
		return nil
	}
	if x.Path == "." {
		return errMalformed("the root is listed twice")
	}
	if _, dup := r.byPath[x.Path]; dup {
		return errMalformed("path %q is listed twice", x.Path)
	}
	parent, _ := split(x.Path)
	pi, ok := r.byPath[parent]
	if !ok || r.entries[pi].Kind != KindDir {
		return gpurent.Errorf(gpurent.CodeInvalid, "delta: refused path %q: its parent is not a directory of the list", x.Path)
	}
	if x.LinkTo >= 0 {
		l := r.entries[x.LinkTo]
		if l.Kind != KindRegular || l.LinkTo >= 0 {
			return errMalformed("hard link %q points to %q, not a file", x.Path, l.Path)
		}
	}
	return nil
}

// structure removes what the source does not have (unless kept) and what
// has another type there, then creates directories, symlinks and special
// files.
func (r *receiver) structure() error {
	var visit func(rel string) error
	visit = func(rel string) error {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		names, err := r.t.names(rel)
		if err != nil {
			r.fail(-1, err)
			return nil
		}
		sort.Strings(names)
		for _, n := range names {
			child := join(rel, n)
			i, ok := r.byPath[child]
			if !ok {
				if r.opts.KeepExtraneous {
					continue
				}
				if err := r.t.removeAll(child); err != nil {
					r.fail(-1, err)
					continue
				}
				r.st.Deleted++
				r.dirty[rel] = true
				continue
			}
			st, err := r.t.lstat(child)
			if err != nil {
				if !errors.Is(err, unix.ENOENT) {
					r.fail(-1, err)
				}
				continue
			}
			if kindOf(st.Mode) != r.entries[i].Kind {
				if err := r.t.removeAll(child); err != nil {
					r.fail(i, err)
				}
				r.dirty[rel] = true
				continue
			}
			if r.entries[i].Kind == KindDir {
				if err := visit(child); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit("."); err != nil {
		return err
	}
	for i := range r.entries {
		x := &r.entries[i]
		if x.Path == "." || x.Kind == KindRegular || r.failed[i] {
			continue
		}
		if err := deviceAllowed(x); err != nil {
			// Left out, not failed: the rest of the tree still moves.
			r.failed[i] = true
			r.st.DevicesSkipped++
			if r.opts.Logger != nil {
				r.opts.Logger.Warn("delta: entry skipped", "err", err)
			}
			if _, err := r.t.lstat(x.Path); err == nil {
				if err := r.t.removeAll(x.Path); err != nil {
					r.fail(-1, err)
				}
			}
			continue
		}
		if err := r.create(x); err != nil {
			r.fail(i, err)
		}
	}
	return nil
}

func (r *receiver) create(x *entry) error {
	st, err := r.t.lstat(x.Path)
	exists := err == nil
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	switch x.Kind {
	case KindDir:
		if exists {
			return nil
		}
	case KindSymlink:
		if exists {
			if target, err := r.t.readlink(x.Path); err == nil && target == x.Target {
				return nil
			}
		}
	default:
		if exists && (x.Kind == KindFIFO || x.Kind == KindSocket || st.Rdev == x.Rdev) {
			return nil
		}
	}
	if exists {
		if err := r.t.removeAll(x.Path); err != nil {
			return err
		}
	}
	fd, base, err := r.t.at(x.Path)
	if err != nil {
		return err
	}
	parent, _ := split(x.Path)
	r.dirty[parent] = true
	switch x.Kind {
	case KindDir:
		return pathErr("mkdir", x.Path, unix.Mkdirat(fd, base, 0o700))
	case KindSymlink:
		return pathErr("symlink", x.Path, unix.Symlinkat(x.Target, fd, base))
	default:
		return pathErr("mknod", x.Path, unix.Mknodat(fd, base, modeBits(x.Kind)|0o600, int(x.Rdev)))
	}
}

// transfer runs the generator (requests with signatures) beside the
// applier (answers), so that signatures are computed while earlier files
// arrive.
func (r *receiver) transfer() error {
	gt, err := openTree(r.root)
	if err != nil {
		return gpurent.WrapError(gpurent.CodeInvalid, err, "delta: cannot open the destination root")
	}
	defer gt.close()
	gen := make(chan error, 1)
	skip := slices.Clone(r.failed) // the applier writes failed meanwhile
	go func() {
		err := r.generate(gt, skip)
		if err != nil {
			interrupt(r.conn)
		}
		gen <- err
	}()
	err = r.apply()
	if err != nil {
		interrupt(r.conn)
		<-gen
		return err
	}
	return <-gen
}

func (r *receiver) generate(gt *tree, skip []bool) error {
	var sbuf []byte
	for i := range r.entries {
		x := &r.entries[i]
		if x.Kind != KindRegular || x.LinkTo >= 0 || skip[i] {
			continue
		}
		if err := r.ctx.Err(); err != nil {
			return err
		}
		req := request{Index: i}
		var sums []blockSum
		st, err := gt.lstat(x.Path)
		if err == nil && kindOf(st.Mode) == KindRegular {
			if st.Size == x.Size && mtimeOf(&st) == x.Mtime {
				continue // unchanged; metadata is fixed at the end
			}
			if st.Size > 0 {
				if err := r.w.flush(); err != nil { // let the sender work meanwhile
					return err
				}
				bs := blockSize(st.Size)
				if sums, err = fileSignature(gt, x.Path, st.Size, bs); err == nil {
					req.BlockSize, req.Blocks, req.BasisSize = bs, len(sums), st.Size
				} else if r.opts.Logger != nil {
					r.opts.Logger.Warn("delta: no signature, sending whole file", "path", x.Path, "err", err)
				}
			}
		}
		r.mu.Lock()
		r.pending[i] = req
		r.mu.Unlock()
		if err := r.w.write(msgRequest, encodeRequest(req)); err != nil {
			return err
		}
		for len(sums) > 0 {
			n := min(len(sums), sumsPerMsg)
			sbuf = encodeSums(sbuf, sums[:n])
			if err := r.w.write(msgSums, sbuf); err != nil {
				return err
			}
			sums = sums[n:]
		}
	}
	if err := r.w.write(msgReqEnd, nil); err != nil {
		return err
	}
	return r.w.flush()
}

func fileSignature(t *tree, rel string, size int64, bs int) ([]blockSum, error) {
	f, err := t.open(rel, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return signature(bufio.NewReaderSize(f, 1<<20), size, bs)
}

func (r *receiver) apply() error {
	r.hash = sha256.New()
	r.out = bufio.NewWriterSize(nil, 1<<20)
	r.copyBuf = make([]byte, 1<<20)
	for {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		typ, p, err := r.r.read()
		if err != nil {
			return err
		}
		switch typ {
		case msgFileBegin:
			i, err := decodeIndex(p, len(r.entries))
			if err != nil {
				return err
			}
			req, ok := r.take(i)
			if !ok {
				return errMalformed("file %d was not requested", i)
			}
			if err := r.applyFile(i, req); err != nil {
				return err
			}
		case msgFileSkip:
			i, vanished, msg, err := decodeFileSkip(p, len(r.entries))
			if err != nil {
				return err
			}
			if _, ok := r.take(i); !ok {
				return errMalformed("skip of file %d, which was not requested", i)
			}
			r.skipped(i, vanished, msg)
		case msgDeltaEnd:
			r.mu.Lock()
			left := len(r.pending)
			r.mu.Unlock()
			if left != 0 {
				return errMalformed("the sender ended with %d requests unanswered", left)
			}
			return nil
		case msgAbort:
			return peerAbort("sender", p)
		default:
			return errMalformed("unexpected message %d while receiving files", typ)
		}
	}
}

func (r *receiver) take(i int) (request, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	req, ok := r.pending[i]
	delete(r.pending, i)
	return req, ok
}

func (r *receiver) skipped(i int, vanished bool, msg string) {
	r.failed[i] = true // keep what is there; the next pass sees it again
	if vanished {
		r.st.Vanished++
		return
	}
	r.st.Errors++ // the sender's error, counted on its side too
	if r.opts.Logger != nil {
		r.opts.Logger.Warn("delta: the sender skipped a file", "path", r.entries[i].Path, "err", msg)
	}
}

// applyFile rebuilds one file into a temporary file beside it and renames
// it over the old one. A local failure keeps reading the file's frames so
// the stream stays in step.
func (r *receiver) applyFile(i int, req request) error {
	x := &r.entries[i]
	var (
		failed error
		out    *os.File
		basis  *os.File
		tmp    string
		size   int64
	)
	dfd, base, err := r.t.at(x.Path)
	if err != nil {
		failed = err
	} else {
		tmp = fmt.Sprintf(".gpurent-delta-%016x.tmp", rand.Uint64())
		fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			failed = pathErr("create", x.Path, err)
		} else {
			out = os.NewFile(uintptr(fd), tmp)
		}
	}
	if failed == nil && req.Blocks > 0 {
		if basis, err = r.t.open(x.Path, unix.O_RDONLY, 0); err != nil {
			failed = err
		}
	}
	cleanup := func() {
		if basis != nil {
			basis.Close()
		}
		if out != nil {
			out.Close()
			if fd, _, err := r.t.at(x.Path); err == nil {
				unix.Unlinkat(fd, tmp, 0)
			}
		}
	}
	r.hash.Reset()
	if out != nil {
		r.out.Reset(out)
	}
	for {
		typ, p, err := r.r.read()
		if err != nil {
			cleanup()
			return err
		}
		switch typ {
		case msgLiteral:
			r.st.LiteralBytes += int64(len(p))
			if failed == nil {
				r.hash.Write(p)
				size += int64(len(p))
				if _, err := r.out.Write(p); err != nil {
					failed = pathErr("write", x.Path, err)
				}
			}
		case msgCopy:
			start, count, err := decodeCopy(p, req.Blocks)
			if err != nil {
				cleanup()
				return err
			}
			off := int64(start) * int64(req.BlockSize)
			n := min(int64(count)*int64(req.BlockSize), req.BasisSize-off)
			r.st.MatchedBytes += n
			if failed == nil {
				if err := r.copyBlocks(basis, off, n); err != nil {
					failed = pathErr("copy", x.Path, err)
				}
				size += n
			}
		case msgFileSkip:
			j, vanished, msg, err := decodeFileSkip(p, len(r.entries))
			if err != nil {
				cleanup()
				return err
			}
			if j != i {
				cleanup()
				return errMalformed("skip of file %d inside file %d", j, i)
			}
			cleanup()
			r.skipped(i, vanished, msg)
			return nil
		case msgFileEnd:
			fe, err := decodeFileEnd(p)
			if err != nil {
				cleanup()
				return err
			}
			if fe.Unstable {
				r.st.Unstable++
			}
			if failed == nil {
				failed = r.out.Flush()
			}
			if failed == nil && (fe.Size != size || [32]byte(r.hash.Sum(nil)) != fe.Sum) {
				failed = gpurent.Errorf(gpurent.CodeInternal, "delta: %s: rebuilt file does not match the source checksum", x.Path)
			}
			if failed == nil {
				failed = r.install(x, dfd, base, out, tmp, fe.Mtime)
			}
			if failed != nil {
				cleanup()
				r.fail(i, failed)
				return nil
			}
			if basis != nil {
				basis.Close()
			}
			r.sent[i] = true
			r.st.FilesTransferred++
			return nil
		default:
			cleanup()
			return errMalformed("unexpected message %d inside a file", typ)
		}
	}
}

func (r *receiver) copyBlocks(basis *os.File, off, n int64) error {
	for n > 0 {
		m := min(n, int64(len(r.copyBuf)))
		if _, err := basis.ReadAt(r.copyBuf[:m], off); err != nil {
			return err
		}
		r.hash.Write(r.copyBuf[:m])
		if _, err := r.out.Write(r.copyBuf[:m]); err != nil {
			return err
		}
		off += m
		n -= m
	}
	return nil
}

// install sets the metadata of the rebuilt file, makes it durable and
// renames it over the old one.
func (r *receiver) install(x *entry, dfd int, base string, out *os.File, tmp string, mtime int64) error {
	parent, _ := split(x.Path)
	if err := r.meta(join(parent, tmp), x, mtime); err != nil {
		return err
	}
	if err := out.Sync(); err != nil {
		return pathErr("fsync", x.Path, err)
	}
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		return pathErr("rename", x.Path, err)
	}
	out.Close()
	r.dirty[parent] = true
	return nil
}

// meta brings owner, xattrs, mode and mtime of rel to those of x, touching
// only what differs. The order matters: chown clears set-id bits and file
// capabilities, so it goes first.
func (r *receiver) meta(rel string, x *entry, mtime int64) error {
	st, err := r.t.lstat(rel)
	if err != nil {
		return err
	}
	fd, base, err := r.t.at(rel)
	if err != nil {
		return err
	}
	if rel == "." {
		base = "."
	}
	chowned := false
	if st.Uid != x.UID || st.Gid != x.GID {
		if err := unix.Fchownat(fd, base, int(x.UID), int(x.GID), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return pathErr("chown", rel, err)
		}
		chowned = true
	}
	if err := r.syncXattrs(rel, x); err != nil {
		return err
	}
	if x.Kind != KindSymlink && (chowned || st.Mode&07777 != x.Perm) {
		if err := unix.Fchmodat(fd, base, x.Perm, 0); err != nil {
			return pathErr("chmod", rel, err)
		}
	}
	if mtime != mtimeOf(&st) {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(mtime)}
		if err := unix.UtimesNanoAt(fd, base, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return pathErr("utimes", rel, err)
		}
	}
	return nil
}

func (r *receiver) syncXattrs(rel string, x *entry) error {
	have, err := r.t.xattrs(rel)
	if err != nil {
		return err
	}
	want := map[string][]byte{}
	for _, a := range x.Xattrs {
		want[a.Name] = a.Value
	}
	for _, a := range have {
		if _, ok := want[a.Name]; !ok {
			if err := r.t.removexattr(rel, a.Name); err != nil && !unsupported(err) {
				return err
			}
		}
	}
	for _, a := range x.Xattrs {
		if cur, ok := find(have, a.Name); ok && string(cur) == string(a.Value) {
			continue
		}
		if err := r.t.setxattr(rel, a.Name, a.Value); err != nil {
			if unsupported(err) {
				r.st.XattrsSkipped++
				continue
			}
			return err
		}
	}
	return nil
}

func find(x []xattr, name string) ([]byte, bool) {
	for _, a := range x {
		if a.Name == name {
			return a.Value, true
		}
	}
	return nil, false
}

// unsupported says an xattr was refused by the filesystem or for this file
// type (user.* on a symlink or device), not failed.
func unsupported(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EPERM)
}

// finish links hard links, fixes the metadata of everything not rebuilt,
// then the directories deepest first, and fsyncs the directories changed.
func (r *receiver) finish() error {
	for i := range r.entries {
		x := &r.entries[i]
		if x.LinkTo < 0 || r.failed[i] {
			continue
		}
		if r.failed[x.LinkTo] {
			r.fail(i, fmt.Errorf("%s: hard link target %s failed", x.Path, r.entries[x.LinkTo].Path))
			continue
		}
		if err := r.link(x, &r.entries[x.LinkTo]); err != nil {
			r.fail(i, err)
		}
	}
	for i := range r.entries {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		x := &r.entries[i]
		if x.Kind == KindDir || x.LinkTo >= 0 || r.failed[i] || r.sent[i] {
			continue
		}
		if err := r.meta(x.Path, x, x.Mtime); err != nil {
			r.fail(i, err)
		}
	}
	for i := len(r.entries) - 1; i >= 0; i-- {
		x := &r.entries[i]
		if x.Kind != KindDir || r.failed[i] {
			continue
		}
		if err := r.meta(x.Path, x, x.Mtime); err != nil {
			r.fail(i, err)
		}
	}
	dirs := make([]string, 0, len(r.dirty))
	for d := range r.dirty {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		fd, err := r.t.dir(d)
		if err != nil {
			continue // removed since
		}
		if err := unix.Fsync(fd); err != nil {
			r.fail(-1, pathErr("fsync", d, err))
		}
	}
	return nil
}

func (r *receiver) link(x, leader *entry) error {
	lst, err := r.t.lstat(leader.Path)
	if err != nil {
		return err
	}
	if st, err := r.t.lstat(x.Path); err == nil {
		if st.Ino == lst.Ino && st.Dev == lst.Dev {
			return nil
		}
		if err := r.t.removeAll(x.Path); err != nil {
			return err
		}
	}
	lfd, lbase, err := r.t.at(leader.Path)
	if err != nil {
		return err
	}
	lfd, err = unix.Dup(lfd)
	if err != nil {
		return pathErr("dup", leader.Path, err)
	}
	defer unix.Close(lfd)
	fd, base, err := r.t.at(x.Path)
	if err != nil {
		return err
	}
	parent, _ := split(x.Path)
	r.dirty[parent] = true
	return pathErr("link", x.Path, unix.Linkat(lfd, lbase, fd, base, 0))
}

// deviceAllowed refuses a block or character device node from a stream,
// but for an overlayfs whiteout (character device 0/0): the receiver runs
// as root on the host, and a node it made would give whoever opens it
// with the host's privileges (the sftp helper before issue 14, a
// container started with other device rules) the device itself. A
// refused node is left out of the copy and counted in
// Stats.DevicesSkipped.
func deviceAllowed(x *entry) error {
	switch {
	case x.Kind == KindBlockDev, x.Kind == KindCharDev && x.Rdev != 0:
		return gpurent.Errorf(gpurent.CodeInvalid, "delta: %s %s (%d:%d) refused: device nodes are not copied (only overlay whiteouts, character device 0/0)",
			x.Kind, x.Path, unix.Major(x.Rdev), unix.Minor(x.Rdev))
	}
	return nil
}
