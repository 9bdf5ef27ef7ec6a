package delta

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"
	"time"

	"github.com/gpurent/gpurent"
	"golang.org/x/sys/unix"
)

// racyWindow is how recent an mtime must be for a live pass to distrust
// it: a write in the same clock tick as the read would not change it.
const racyWindow = time.Second

// Send sends the tree under root to the Receive at the other end of conn and
// returns when the receiver has applied everything. Symlinks are never
// followed. Entries that cannot be read are skipped and counted in
// Stats.Errors; stream and protocol failures end the pass with an error.
func Send(ctx context.Context, root string, conn io.ReadWriter, opts Options) (Stats, error) {
	var st Stats
	t, err := openTree(root)
	if err != nil {
		return st, gpurent.WrapError(gpurent.CodeInvalid, err, "delta: cannot open the source root")
	}
	defer t.close()
	stop := watch(ctx, conn)
	defer stop()
	s := &sender{ctx: ctx, t: t, opts: opts, st: &st, w: newFrameWriter(conn), r: newFrameReader(conn)}
	s.r.before = s.w.flush
	err = s.run()
	st.BytesSent, st.BytesReceived = s.w.n, s.r.n
	if err != nil && ctx.Err() != nil {
		err = gpurent.WrapError(gpurent.CodeUnavailable, ctx.Err(), "delta: send cancelled")
	}
	return st, err
}

type sender struct {
	ctx     context.Context
	t       *tree
	opts    Options
	st      *Stats
	w       *frameWriter
	r       *frameReader
	entries []entry
	asked   []bool
	buf     []byte
	hash    hash.Hash
}

func (s *sender) run() error {
	if err := s.w.write(msgHello, encodeHello()); err != nil {
		return err
	}
	if err := s.w.flush(); err != nil {
		return err
	}
	if err := s.hello(); err != nil {
		return err
	}
	walkErrors, err := s.walk()
	if err != nil {
		s.abort(err)
		return err
	}
	if err := s.w.write(msgListEnd, encodeListEnd(walkErrors)); err != nil {
		return err
	}
	s.asked = make([]bool, len(s.entries))
	s.hash = sha256.New()
	s.buf = make([]byte, 2*(literalMax+maxBlock))
	for {
		typ, p, err := s.r.read()
		if err != nil {
			return err
		}
		switch typ {
		case msgRequest:
			req, err := decodeRequest(p, len(s.entries))
			if err != nil {
				return err
			}
			if err := s.answer(req); err != nil {
				return err
			}
		case msgReqEnd:
			if err := s.w.write(msgDeltaEnd, nil); err != nil {
				return err
			}
			return s.done()
		case msgAbort:
			return peerAbort("receiver", p)
		default:
			return errMalformed("unexpected message %d while waiting for requests", typ)
		}
	}
}

func (s *sender) hello() error {
	v, err := s.r.readHello("receiver")
	if err != nil {
		return err
	}
	if v != Version {
		return gpurent.Errorf(gpurent.CodeInvalid, "delta: protocol version mismatch: this sender speaks %d, the receiver %d", Version, v)
	}
	return nil
}

func (s *sender) done() error {
	typ, p, err := s.r.read()
	if err != nil {
		return err
	}
	switch typ {
	case msgDone:
		c, err := decodeDone(p)
		if err != nil {
			return err
		}
		s.st.Deleted = c.Deleted
		s.st.Errors += c.Errors
		s.st.XattrsSkipped = c.XattrsSkipped
		return nil
	case msgAbort:
		return peerAbort("receiver", p)
	}
	return errMalformed("expected done, got message %d", typ)
}

func (s *sender) abort(err error) {
	s.w.write(msgAbort, encodeText(gpurent.ErrorMessage(err)))
	s.w.flush()
}

func peerAbort(who string, p []byte) error {
	msg, err := decodeText(p)
	if err != nil {
		return err
	}
	return gpurent.Errorf(gpurent.CodeUnavailable, "delta: the %s aborted: %s", who, msg)
}

// walk lists the tree depth first, sending each entry as it goes. Entries
// that cannot be read are counted and left out; only a root that cannot be
// listed ends the pass.
func (s *sender) walk() (int64, error) {
	var walkErrors int64
	links := map[[2]uint64]int{}
	var visit func(rel string, root bool) error
	ebuf := make([]byte, 0, 4096)
	visit = func(rel string, isRoot bool) error {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		st, err := s.t.lstat(rel)
		if err != nil {
			if isRoot {
				return gpurent.WrapError(gpurent.CodeInvalid, err, "delta: cannot read the source root")
			}
			if !errors.Is(err, unix.ENOENT) {
				walkErrors++
				s.st.fail(s.opts.Logger, err)
			}
			return nil
		}
		x := entry{Path: rel, Kind: kindOf(st.Mode), Perm: st.Mode & 07777, UID: st.Uid, GID: st.Gid,
			Mtime: mtimeOf(&st), LinkTo: -1}
		if x.Kind == 0 {
			walkErrors++
			s.st.fail(s.opts.Logger, fmt.Errorf("%s: unknown file type %o", rel, st.Mode&unix.S_IFMT))
			return nil
		}
		switch x.Kind {
		case KindRegular:
			x.Size = st.Size
			if st.Nlink > 1 {
				key := [2]uint64{st.Dev, st.Ino}
				if leader, ok := links[key]; ok {
					x.LinkTo = leader
				} else {
					links[key] = len(s.entries)
				}
			}
		case KindSymlink:
			if x.Target, err = s.t.readlink(rel); err != nil {
				walkErrors++
				s.st.fail(s.opts.Logger, err)
				return nil
			}
		case KindCharDev, KindBlockDev:
			x.Rdev = st.Rdev
		}
		if x.LinkTo < 0 {
			if x.Xattrs, err = s.t.xattrs(rel); err != nil {
				walkErrors++
				s.st.fail(s.opts.Logger, err)
				return nil
			}
		}
		var names []string
		if x.Kind == KindDir {
			if names, err = s.t.names(rel); err != nil {
				if isRoot {
					return gpurent.WrapError(gpurent.CodeInvalid, err, "delta: cannot list the source root")
				}
				walkErrors++
				s.st.fail(s.opts.Logger, err)
				return nil
			}
			sort.Strings(names)
		}
		ebuf = encodeEntry(ebuf, &x)
		if len(ebuf) > maxFrame {
			walkErrors++
			s.st.fail(s.opts.Logger, fmt.Errorf("%s: metadata too large", rel))
			return nil
		}
		if err := s.w.write(msgEntry, ebuf); err != nil {
			return err
		}
		x.Xattrs = nil // not needed any more; keeps the list small
		s.entries = append(s.entries, x)
		s.st.FilesSeen++
		for _, n := range names {
			if err := visit(join(rel, n), false); err != nil {
				return err
			}
		}
		return nil
	}
	return walkErrors, visit(".", true)
}

// answer sends one requested file: literal data and references to the
// receiver's blocks, then its size, SHA-256 and mtime; or a skip.
func (s *sender) answer(req request) error {
	x := &s.entries[req.Index]
	if x.Kind != KindRegular || x.LinkTo >= 0 || s.asked[req.Index] {
		return errMalformed("request for entry %d (%s), which is not a file to send", req.Index, x.Path)
	}
	s.asked[req.Index] = true
	var sums []blockSum
	for len(sums) < req.Blocks {
		typ, p, err := s.r.read()
		if err != nil {
			return err
		}
		if typ != msgSums {
			return errMalformed("expected block sums, got message %d", typ)
		}
		if sums, err = decodeSums(p, sums); err != nil {
			return err
		}
		if len(sums) > req.Blocks {
			return errMalformed("more block sums than announced")
		}
	}
	if err := s.ctx.Err(); err != nil {
		return err
	}
	f, err := s.t.open(x.Path, unix.O_RDONLY, 0)
	if err != nil {
		return s.skip(req.Index, err)
	}
	defer f.Close()
	var before unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &before); err != nil {
		return s.skip(req.Index, pathErr("fstat", x.Path, err))
	}
	if kindOf(before.Mode) != KindRegular {
		return s.skip(req.Index, fmt.Errorf("%s: no longer a regular file", x.Path))
	}
	readStart := time.Now()
	if err := s.w.write(msgFileBegin, encodeIndex(req.Index)); err != nil {
		return err
	}
	s.hash.Reset()
	m := matcher{s: s, f: f}
	if req.Blocks > 0 {
		m.ix = newIndex(sums, req.BlockSize, req.BasisSize)
	}
	if err := m.run(); err != nil {
		return err
	}
	if m.readErr != nil {
		return s.skip(req.Index, pathErr("read", x.Path, m.readErr))
	}
	var after unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &after); err != nil {
		return pathErr("fstat", x.Path, err) // cannot happen on an open file; fatal
	}
	fe := fileEnd{Size: m.size, Mtime: mtimeOf(&after)}
	if !s.opts.Final && (after.Size != before.Size || mtimeOf(&after) != mtimeOf(&before) ||
		ctimeOf(&after) != ctimeOf(&before) || m.size != after.Size ||
		mtimeOf(&after) > readStart.Add(-racyWindow).UnixNano()) {
		fe.Unstable = true
		fe.Mtime++
		s.st.Unstable++
	}
	copy(fe.Sum[:], s.hash.Sum(nil))
	s.st.FilesTransferred++
	return s.w.write(msgFileEnd, encodeFileEnd(fe))
}

// skip tells the receiver a file could not be sent. A file that vanished is
// not an error: the next pass deletes it.
func (s *sender) skip(index int, cause error) error {
	vanished := errors.Is(cause, unix.ENOENT)
	if vanished {
		s.st.Vanished++
	} else {
		s.st.fail(s.opts.Logger, cause)
	}
	return s.w.write(msgFileSkip, encodeFileSkip(index, vanished, cause.Error()))
}

// matcher streams one file, as literals only when there is no index, else
// with rsync's rolling search for the receiver's blocks.
type matcher struct {
	s    *sender
	f    io.Reader
	ix   *index
	size int64 // bytes read from the file

	buf      []byte
	lo, hi   int // valid bytes buf[lo:hi]; lo is the start of pending literal
	eof      bool
	runStart int // pending copy run
	runLen   int
	readErr  error
}

func (m *matcher) fill() error {
	if m.eof {
		return nil
	}
	if m.hi == len(m.buf) {
		if m.lo == 0 {
			return gpurent.Errorf(gpurent.CodeInternal, "delta: matcher buffer full")
		}
		m.hi = copy(m.buf, m.buf[m.lo:m.hi])
		m.lo = 0
	}
	n, err := m.f.Read(m.buf[m.hi:])
	m.hi += n
	m.size += int64(n)
	if err == io.EOF {
		m.eof = true
		return nil
	}
	if err != nil {
		// The file is open; a read error is the disk's. The file is
		// cut short here and skipped after its last frame.
		m.eof = true
		m.readErr = err
	}
	return nil
}

func (m *matcher) literal(p []byte) error {
	if err := m.flushRun(); err != nil {
		return err
	}
	for len(p) > 0 {
		n := min(len(p), literalMax)
		m.s.hash.Write(p[:n])
		if err := m.s.w.write(msgLiteral, p[:n]); err != nil {
			return err
		}
		m.s.st.LiteralBytes += int64(n)
		p = p[n:]
	}
	return nil
}

func (m *matcher) block(b int, data []byte) error {
	m.s.hash.Write(data)
	m.s.st.MatchedBytes += int64(len(data))
	if m.runLen > 0 && m.runStart+m.runLen == b {
		m.runLen++
		return nil
	}
	if err := m.flushRun(); err != nil {
		return err
	}
	m.runStart, m.runLen = b, 1
	return nil
}

func (m *matcher) flushRun() error {
	if m.runLen == 0 {
		return nil
	}
	err := m.s.w.write(msgCopy, encodeCopy(m.runStart, m.runLen))
	m.runLen = 0
	return err
}

func (m *matcher) run() error {
	m.buf = m.s.buf
	m.lo, m.hi = 0, 0
	if m.ix == nil {
		for !m.eof {
			if err := m.fill(); err != nil {
				return err
			}
			if err := m.literal(m.buf[m.lo:m.hi]); err != nil {
				return err
			}
			m.lo, m.hi = 0, 0
		}
		return m.flushRun()
	}
	bs := m.ix.bs
	k := 0 // window start; buf[lo:k] is pending literal
	var r rolling
	fresh := true
	prefer := -1
	for {
		if err := m.s.ctx.Err(); err != nil {
			return err
		}
		if m.hi-k < bs+1 && !m.eof {
			// Keep the pending literal short and make room.
			if k-m.lo >= literalMax || m.hi == len(m.buf) {
				if err := m.literal(m.buf[m.lo:k]); err != nil {
					return err
				}
				m.lo = k
			}
			old := m.lo
			if err := m.fill(); err != nil {
				return err
			}
			k -= old - m.lo
			continue
		}
		if m.hi-k < bs {
			break // tail shorter than a block
		}
		if fresh {
			r.init(m.buf[k : k+bs])
			fresh = false
		}
		w := r.sum()
		if m.ix.maybe(w) {
			if b := m.ix.find(w, m.buf[k:k+bs], prefer); b >= 0 {
				if err := m.literal(m.buf[m.lo:k]); err != nil {
					return err
				}
				if err := m.block(b, m.buf[k:k+bs]); err != nil {
					return err
				}
				k += bs
				m.lo = k
				fresh = true
				prefer = b + 1
				continue
			}
		}
		if k+bs < m.hi {
			r.roll(m.buf[k], m.buf[k+bs])
			k++
		} else {
			// at EOF with exactly one window left and no match
			k++
			fresh = true
		}
		if k-m.lo >= literalMax {
			if err := m.literal(m.buf[m.lo:k]); err != nil {
				return err
			}
			m.lo = k
		}
	}
	// The tail may be the receiver's short last block.
	tail := m.buf[k:m.hi]
	if len(tail) > 0 && len(tail) == m.ix.lastLen && len(tail) < bs {
		last := len(m.ix.sums) - 1
		if m.ix.sums[last].Weak == weakSum(tail) && m.ix.sums[last].Strong == strongSum(tail) {
			if err := m.literal(m.buf[m.lo:k]); err != nil {
				return err
			}
			if err := m.block(last, tail); err != nil {
				return err
			}
			return m.flushRun()
		}
	}
	if err := m.literal(m.buf[m.lo:m.hi]); err != nil {
		return err
	}
	return m.flushRun()
}
