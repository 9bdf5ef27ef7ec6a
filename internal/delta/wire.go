package delta

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strings"

	"github.com/gpurent/gpurent"
)

// Version is the protocol version this package speaks. Both ends must speak
// the same one.
const Version = 1

const (
	magic      = "gpurent-delta"
	maxFrame   = 1 << 20 // largest payload accepted
	maxPath    = 4096
	maxName    = 255
	maxXattrs  = 1024
	maxXattrV  = 64 << 10
	literalMax = 256 << 10 // largest literal chunk sent
	sumsPerMsg = 16 << 10  // block sums per sums message
	strongLen  = 16
	sumLen     = 4 + strongLen
	minBlock   = 2 << 10
	maxBlock   = 128 << 10
	maxBlocks  = 1 << 24
)

// Message types.
const (
	msgHello     byte = 1
	msgAbort     byte = 2
	msgEntry     byte = 3
	msgListEnd   byte = 4
	msgRequest   byte = 5
	msgSums      byte = 6
	msgReqEnd    byte = 7
	msgFileBegin byte = 8
	msgLiteral   byte = 9
	msgCopy      byte = 10
	msgFileEnd   byte = 11
	msgFileSkip  byte = 12
	msgDeltaEnd  byte = 13
	msgDone      byte = 14
)

// Kind is the type of a tree entry.
type Kind uint8

// The entry kinds.
const (
	KindDir Kind = iota + 1
	KindRegular
	KindSymlink
	KindFIFO
	KindSocket
	KindCharDev
	KindBlockDev
)

func (k Kind) String() string {
	switch k {
	case KindDir:
		return "dir"
	case KindRegular:
		return "file"
	case KindSymlink:
		return "symlink"
	case KindFIFO:
		return "fifo"
	case KindSocket:
		return "socket"
	case KindCharDev:
		return "chardev"
	case KindBlockDev:
		return "blockdev"
	}
	return "unknown"
}

// xattr is one extended attribute.
type xattr struct {
	Name  string
	Value []byte
}

// entry is one path of the source tree as it travels in the file list.
type entry struct {
	Path   string // slash-separated, relative, "." for the root
	Kind   Kind
	Perm   uint32 // 07777 bits
	UID    uint32
	GID    uint32
	Size   int64
	Mtime  int64 // Unix nanoseconds
	Rdev   uint64
	Target string // symlink target, as text
	LinkTo int    // index of the entry this one is a hard link of, or -1
	Xattrs []xattr
}

// errMalformed builds the error for a stream that does not follow the protocol.
func errMalformed(format string, args ...any) error {
	return gpurent.Errorf(gpurent.CodeInvalid, "delta: malformed stream: "+format, args...)
}

// enc builds one payload.
type enc struct{ b []byte }

func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) bytes(p []byte)   { e.uvarint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }

// dec reads one payload; the first problem sticks in err.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = errMalformed("bad %s", what)
	}
}

func (d *dec) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bounded reads an unsigned integer no larger than max.
func (d *dec) bounded(what string, max uint64) uint64 {
	v := d.uvarint(what)
	if v > max {
		d.fail(what)
		return 0
	}
	return v
}

func (d *dec) bytes(what string, max int) []byte {
	n := d.bounded(what, uint64(max))
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)) < n {
		d.fail(what)
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) str(what string, max int) string { return string(d.bytes(what, max)) }

func (d *dec) fixed(what string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail(what)
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

// end reports the first problem, or trailing bytes.
func (d *dec) end(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = errMalformed("trailing bytes after %s", what)
	}
	return d.err
}

// frameWriter writes framed messages through a buffer and counts the bytes.
type frameWriter struct {
	w   *bufio.Writer
	n   int64
	hdr [5]byte
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{w: bufio.NewWriterSize(w, 256<<10)}
}

func (f *frameWriter) write(typ byte, payload []byte) error {
	if len(payload) > maxFrame {
		return gpurent.Errorf(gpurent.CodeInternal, "delta: frame of %d bytes exceeds the limit", len(payload))
	}
	f.hdr[0] = typ
	binary.BigEndian.PutUint32(f.hdr[1:], uint32(len(payload)))
	if _, err := f.w.Write(f.hdr[:]); err != nil {
		return wrapIO(err)
	}
	if _, err := f.w.Write(payload); err != nil {
		return wrapIO(err)
	}
	f.n += int64(len(payload)) + 5
	return nil
}

func (f *frameWriter) flush() error { return wrapIO(f.w.Flush()) }

// frameReader reads framed messages. The payload returned is valid until
// the next call.
type frameReader struct {
	r   *bufio.Reader
	n   int64
	buf []byte
	// before, when set, runs when the reader is about to block on the
	// stream (used to flush the writer of a request/answer loop).
	before func() error
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 256<<10)}
}

func (f *frameReader) read() (byte, []byte, error) {
	if f.before != nil && f.r.Buffered() < 5 {
		if err := f.before(); err != nil {
			return 0, nil, err
		}
	}
	var hdr [5]byte
	if _, err := io.ReadFull(f.r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "delta: the peer closed the stream")
		}
		return 0, nil, wrapIO(err)
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, errMalformed("frame of %d bytes exceeds the limit of %d", n, maxFrame)
	}
	if cap(f.buf) < int(n) {
		f.buf = make([]byte, n, max(int(n), 64<<10))
	}
	p := f.buf[:n]
	if f.before != nil && f.r.Buffered() < int(n) {
		if err := f.before(); err != nil {
			return 0, nil, err
		}
	}
	if _, err := io.ReadFull(f.r, p); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return 0, nil, errMalformed("stream ends inside a frame")
		}
		return 0, nil, wrapIO(err)
	}
	f.n += int64(n) + 5
	return hdr[0], p, nil
}

// wrapIO marks a stream failure as unavailable (the peer or the network).
func wrapIO(err error) error {
	if err == nil {
		return nil
	}
	var ge *gpurent.Error
	if errors.As(err, &ge) {
		return err
	}
	return gpurent.WrapError(gpurent.CodeUnavailable, err, "delta: stream failed")
}

// Payload encoders and decoders, one pair per message.

func encodeHello() []byte {
	e := enc{}
	e.str(magic)
	e.uvarint(Version)
	return e.b
}

func decodeHello(p []byte) (uint64, error) {
	d := dec{b: p}
	m := d.str("hello magic", 64)
	v := d.uvarint("hello version")
	if err := d.end("hello"); err != nil {
		return 0, err
	}
	if m != magic {
		return 0, errMalformed("not a gpurent delta stream")
	}
	return v, nil
}

func encodeText(s string) []byte {
	if len(s) > 4096 {
		s = s[:4096]
	}
	e := enc{}
	e.str(s)
	return e.b
}

func decodeText(p []byte) (string, error) {
	d := dec{b: p}
	s := d.str("text", 4096)
	return s, d.end("text")
}

func encodeEntry(b []byte, x *entry) []byte {
	e := enc{b: b[:0]}
	e.str(x.Path)
	e.uvarint(uint64(x.Kind))
	e.uvarint(uint64(x.Perm))
	e.uvarint(uint64(x.UID))
	e.uvarint(uint64(x.GID))
	e.varint(x.Size)
	e.varint(x.Mtime)
	e.uvarint(x.Rdev)
	e.str(x.Target)
	e.uvarint(uint64(x.LinkTo + 1))
	e.uvarint(uint64(len(x.Xattrs)))
	for _, a := range x.Xattrs {
		e.str(a.Name)
		e.bytes(a.Value)
	}
	return e.b
}

// decodeEntry decodes and validates one list entry; index is its position
// in the list, so that a hard link can only point backwards.
func decodeEntry(p []byte, index int) (entry, error) {
	d := dec{b: p}
	var x entry
	x.Path = d.str("entry path", maxPath)
	x.Kind = Kind(d.bounded("entry kind", uint64(KindBlockDev)))
	x.Perm = uint32(d.bounded("entry mode", 07777))
	x.UID = uint32(d.bounded("entry uid", math.MaxUint32))
	x.GID = uint32(d.bounded("entry gid", math.MaxUint32))
	x.Size = d.varint("entry size")
	x.Mtime = d.varint("entry mtime")
	x.Rdev = d.uvarint("entry rdev")
	x.Target = d.str("entry symlink target", maxPath)
	x.LinkTo = int(d.bounded("entry link", uint64(index))) - 1
	n := d.bounded("entry xattr count", maxXattrs)
	for i := uint64(0); i < n && d.err == nil; i++ {
		name := d.str("xattr name", maxName)
		val := d.bytes("xattr value", maxXattrV)
		x.Xattrs = append(x.Xattrs, xattr{Name: name, Value: append([]byte(nil), val...)})
	}
	if err := d.end("entry"); err != nil {
		return entry{}, err
	}
	if x.Kind == 0 {
		return entry{}, errMalformed("entry %q has no kind", x.Path)
	}
	if x.Size < 0 {
		return entry{}, errMalformed("entry %q has a negative size", x.Path)
	}
	if err := checkPath(x.Path); err != nil {
		return entry{}, err
	}
	if x.Path == "." && x.Kind != KindDir {
		return entry{}, errMalformed("the root entry must be a directory")
	}
	if x.Kind == KindSymlink && (x.Target == "" || strings.IndexByte(x.Target, 0) >= 0) {
		return entry{}, errMalformed("symlink %q has a bad target", x.Path)
	}
	if x.Kind != KindSymlink && x.Target != "" {
		return entry{}, errMalformed("entry %q is not a symlink but has a target", x.Path)
	}
	if x.LinkTo >= 0 && x.Kind != KindRegular {
		return entry{}, errMalformed("entry %q is a hard link but not a regular file", x.Path)
	}
	for _, a := range x.Xattrs {
		if a.Name == "" || strings.IndexByte(a.Name, 0) >= 0 || !copiedXattr(a.Name) {
			return entry{}, errMalformed("entry %q has a bad xattr name %q", x.Path, a.Name)
		}
	}
	return x, nil
}

// checkPath refuses any path that could leave the root: it must be "." or a
// clean relative slash-separated path without "." or ".." components.
func checkPath(p string) error {
	if p == "." {
		return nil
	}
	if p == "" || len(p) > maxPath || strings.IndexByte(p, 0) >= 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "delta: refused path %q: empty, too long or with NUL", p)
	}
	if p[0] == '/' {
		return gpurent.Errorf(gpurent.CodeInvalid, "delta: refused absolute path %q", p)
	}
	for part := range strings.SplitSeq(p, "/") {
		switch {
		case part == "..":
			return gpurent.Errorf(gpurent.CodeInvalid, "delta: refused path %q: it climbs out with ..", p)
		case part == "" || part == ".":
			return gpurent.Errorf(gpurent.CodeInvalid, "delta: refused path %q: not clean", p)
		case len(part) > maxName:
			return gpurent.Errorf(gpurent.CodeInvalid, "delta: refused path %q: a name is too long", p)
		}
	}
	return nil
}

func encodeListEnd(walkErrors int64) []byte {
	e := enc{}
	e.uvarint(uint64(walkErrors))
	return e.b
}

func decodeListEnd(p []byte) (int64, error) {
	d := dec{b: p}
	n := d.bounded("list end", math.MaxInt32)
	return int64(n), d.end("list end")
}

// request asks for one file; the receiver has a basis of BasisSize bytes
// cut into Blocks blocks of BlockSize (the last one may be short), or no
// basis when Blocks is 0.
type request struct {
	Index     int
	BlockSize int
	Blocks    int
	BasisSize int64
}

func encodeRequest(r request) []byte {
	e := enc{}
	e.uvarint(uint64(r.Index))
	e.uvarint(uint64(r.BlockSize))
	e.uvarint(uint64(r.Blocks))
	e.uvarint(uint64(r.BasisSize))
	return e.b
}

func decodeRequest(p []byte, entries int) (request, error) {
	d := dec{b: p}
	var r request
	r.Index = int(d.bounded("request index", uint64(max(entries-1, 0))))
	r.BlockSize = int(d.bounded("request block size", maxBlock))
	r.Blocks = int(d.bounded("request block count", maxBlocks))
	r.BasisSize = int64(d.bounded("request basis size", math.MaxInt64))
	if err := d.end("request"); err != nil {
		return request{}, err
	}
	if entries == 0 {
		return request{}, errMalformed("request for an empty list")
	}
	if r.Blocks == 0 {
		if r.BlockSize != 0 || r.BasisSize != 0 {
			return request{}, errMalformed("request without blocks has a block size")
		}
		return r, nil
	}
	if r.BlockSize < minBlock {
		return request{}, errMalformed("request block size %d below %d", r.BlockSize, minBlock)
	}
	lo := int64(r.Blocks-1) * int64(r.BlockSize)
	if r.BasisSize <= lo || r.BasisSize > lo+int64(r.BlockSize) {
		return request{}, errMalformed("request basis size %d does not fit %d blocks of %d", r.BasisSize, r.Blocks, r.BlockSize)
	}
	return r, nil
}

// blockSum is the signature of one block.
type blockSum struct {
	Weak   uint32
	Strong [strongLen]byte
}

func encodeSums(b []byte, sums []blockSum) []byte {
	b = b[:0]
	for _, s := range sums {
		b = binary.BigEndian.AppendUint32(b, s.Weak)
		b = append(b, s.Strong[:]...)
	}
	return b
}

func decodeSums(p []byte, into []blockSum) ([]blockSum, error) {
	if len(p) == 0 || len(p)%sumLen != 0 {
		return into, errMalformed("sums message of %d bytes", len(p))
	}
	for len(p) > 0 {
		var s blockSum
		s.Weak = binary.BigEndian.Uint32(p)
		copy(s.Strong[:], p[4:sumLen])
		into = append(into, s)
		p = p[sumLen:]
	}
	return into, nil
}

func encodeIndex(i int) []byte {
	e := enc{}
	e.uvarint(uint64(i))
	return e.b
}

func decodeIndex(p []byte, entries int) (int, error) {
	d := dec{b: p}
	i := d.uvarint("index")
	if err := d.end("index"); err != nil {
		return 0, err
	}
	if i >= uint64(entries) {
		return 0, errMalformed("index %d out of the list of %d", i, entries)
	}
	return int(i), nil
}

// copyRun references Count blocks of the basis from block Start.
func encodeCopy(start, count int) []byte {
	e := enc{}
	e.uvarint(uint64(start))
	e.uvarint(uint64(count))
	return e.b
}

func decodeCopy(p []byte, blocks int) (int, int, error) {
	d := dec{b: p}
	s := d.uvarint("copy start")
	c := d.uvarint("copy count")
	if err := d.end("copy"); err != nil {
		return 0, 0, err
	}
	if c == 0 || s >= uint64(blocks) || c > uint64(blocks)-s {
		return 0, 0, errMalformed("copy of blocks %d+%d outside the basis of %d blocks", s, c, blocks)
	}
	return int(s), int(c), nil
}

// fileEnd closes one file: its size and SHA-256 as sent, and the mtime to
// set.
type fileEnd struct {
	Size     int64
	Mtime    int64
	Unstable bool
	Sum      [32]byte
}

func encodeFileEnd(f fileEnd) []byte {
	e := enc{}
	e.uvarint(uint64(f.Size))
	e.varint(f.Mtime)
	if f.Unstable {
		e.uvarint(1)
	} else {
		e.uvarint(0)
	}
	e.b = append(e.b, f.Sum[:]...)
	return e.b
}

func decodeFileEnd(p []byte) (fileEnd, error) {
	d := dec{b: p}
	var f fileEnd
	f.Size = int64(d.bounded("file size", math.MaxInt64))
	f.Mtime = d.varint("file mtime")
	f.Unstable = d.bounded("file flags", 1) == 1
	copy(f.Sum[:], d.fixed("file checksum", 32))
	return f, d.end("file end")
}

// fileSkip says the sender could not send a requested file.
func encodeFileSkip(index int, vanished bool, msg string) []byte {
	e := enc{}
	e.uvarint(uint64(index))
	if vanished {
		e.uvarint(1)
	} else {
		e.uvarint(0)
	}
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	e.str(msg)
	return e.b
}

func decodeFileSkip(p []byte, entries int) (int, bool, string, error) {
	d := dec{b: p}
	i := d.uvarint("skip index")
	v := d.bounded("skip flags", 1) == 1
	m := d.str("skip message", 1024)
	if err := d.end("file skip"); err != nil {
		return 0, false, "", err
	}
	if i >= uint64(entries) {
		return 0, false, "", errMalformed("skip index %d out of the list of %d", i, entries)
	}
	return int(i), v, m, nil
}

// doneCounts are the receiver's counts, sent back to the sender.
type doneCounts struct {
	Deleted, Errors, XattrsSkipped, Transferred int64
}

func encodeDone(c doneCounts) []byte {
	e := enc{}
	e.uvarint(uint64(c.Deleted))
	e.uvarint(uint64(c.Errors))
	e.uvarint(uint64(c.XattrsSkipped))
	e.uvarint(uint64(c.Transferred))
	return e.b
}

func decodeDone(p []byte) (doneCounts, error) {
	d := dec{b: p}
	var c doneCounts
	c.Deleted = int64(d.bounded("done", math.MaxInt64))
	c.Errors = int64(d.bounded("done", math.MaxInt64))
	c.XattrsSkipped = int64(d.bounded("done", math.MaxInt64))
	c.Transferred = int64(d.bounded("done", math.MaxInt64))
	return c, d.end("done")
}

// readHello reads the peer's hello and answers its protocol version; an
// abort or any other message instead is an error naming the peer.
func (r *frameReader) readHello(peer string) (uint64, error) {
	typ, p, err := r.read()
	if err != nil {
		return 0, err
	}
	if typ == msgAbort {
		return 0, peerAbort(peer, p)
	}
	if typ != msgHello {
		return 0, errMalformed("expected hello, got message %d", typ)
	}
	return decodeHello(p)
}
