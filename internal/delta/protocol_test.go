package delta

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent"
)

type frame struct {
	typ byte
	p   []byte
}

// fakeSender plays a hand-written sender against Receive and returns the
// receiver's error and the first message it answered after the hello.
func fakeSender(t *testing.T, dst string, frames []frame) (byte, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := Receive(ctx, dst, b, Options{})
		b.Close()
		errc <- err
	}()
	w, r := newFrameWriter(a), newFrameReader(a)
	got := make(chan byte, 1)
	go func() {
		var last byte
		for i := 0; ; i++ {
			typ, _, err := r.read()
			if err != nil {
				break
			}
			if i > 0 && last == 0 {
				last = typ
			}
		}
		got <- last
	}()
	w.write(msgHello, encodeHello())
	for _, f := range frames {
		if w.write(f.typ, f.p) != nil {
			break
		}
	}
	w.flush()
	err := <-errc
	a.Close()
	return <-got, err
}

func entryFrame(x entry) frame { return frame{msgEntry, encodeEntry(nil, &x)} }

func rootEntry() entry { return entry{Path: ".", Kind: KindDir, Perm: 0o755, LinkTo: -1} }

func TestRefusesEscapes(t *testing.T) {
	bad := []entry{
		{Path: "../evil", Kind: KindRegular, LinkTo: -1},
		{Path: "/etc/evil", Kind: KindRegular, LinkTo: -1},
		{Path: "a/../../evil", Kind: KindRegular, LinkTo: -1},
		{Path: "./evil", Kind: KindRegular, LinkTo: -1},
		{Path: "link/evil", Kind: KindRegular, LinkTo: -1}, // through the symlink below
		{Path: "nodir/evil", Kind: KindRegular, LinkTo: -1},
	}
	for _, x := range bad {
		t.Run(x.Path, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst", "in")
			os.MkdirAll(dst, 0o755)
			frames := []frame{entryFrame(rootEntry()),
				entryFrame(entry{Path: "link", Kind: KindSymlink, Target: "/etc", LinkTo: -1}),
				entryFrame(x),
				{msgListEnd, encodeListEnd(0)}}
			answer, err := fakeSender(t, dst, frames)
			if !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), "refused") && !strings.Contains(err.Error(), "malformed") {
				t.Fatalf("want an invalid error, got %v", err)
			}
			if answer != msgAbort {
				t.Fatalf("the sender got message %d, want abort", answer)
			}
			if _, err := os.Lstat(filepath.Join(parent, "dst", "evil")); err == nil {
				t.Fatal("a file was written outside the root")
			}
			t.Logf("%v", err)
		})
	}
}

// TestDestinationSymlinkNotFollowed: the destination has a symlink where
// the source has a directory; files go into a new directory, never through
// the link.
func TestDestinationSymlinkNotFollowed(t *testing.T) {
	src, dst, outside := t.TempDir(), t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(src, "d"), 0o755)
	os.WriteFile(filepath.Join(src, "d", "f"), []byte("data"), 0o644)
	os.Symlink(outside, filepath.Join(dst, "d"))
	syncTrees(t, src, dst, Options{Final: true}, Options{KeepExtraneous: true})
	if _, err := os.Lstat(filepath.Join(outside, "f")); err == nil {
		t.Fatal("wrote through a destination symlink")
	}
	requireEqualTrees(t, src, dst)
}

func TestTreeNeverFollowsSymlinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600)
	os.Symlink(outside, filepath.Join(root, "s"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "f"))
	tr, err := openTree(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	if f, err := tr.open("s/secret", os.O_RDONLY, 0); err == nil {
		f.Close()
		t.Fatal("opened a file through a symlinked directory")
	}
	if f, err := tr.open("f", os.O_RDONLY, 0); err == nil {
		f.Close()
		t.Fatal("opened a symlink to a file")
	}
	if _, err := tr.lstat("s/secret"); err == nil {
		t.Fatal("stat through a symlinked directory")
	}
}

func TestMalformedStreams(t *testing.T) {
	cases := map[string][]frame{
		"not a list":         {{msgLiteral, []byte("x")}},
		"no root":            {entryFrame(entry{Path: "a", Kind: KindDir, LinkTo: -1}), {msgListEnd, encodeListEnd(0)}},
		"duplicate":          {entryFrame(rootEntry()), entryFrame(entry{Path: "a", Kind: KindDir, LinkTo: -1}), entryFrame(entry{Path: "a", Kind: KindDir, LinkTo: -1}), {msgListEnd, encodeListEnd(0)}},
		"garbage entry":      {entryFrame(rootEntry()), {msgEntry, []byte{1, 2, 3}}, {msgListEnd, encodeListEnd(0)}},
		"link to dir":        {entryFrame(rootEntry()), entryFrame(entry{Path: "a", Kind: KindDir, LinkTo: -1}), entryFrame(entry{Path: "b", Kind: KindRegular, LinkTo: 1}), {msgListEnd, encodeListEnd(0)}},
		"unrequested file":   {entryFrame(rootEntry()), {msgListEnd, encodeListEnd(0)}, {msgFileBegin, encodeIndex(0)}},
		"index out of range": {entryFrame(rootEntry()), {msgListEnd, encodeListEnd(0)}, {msgFileBegin, encodeIndex(7)}},
	}
	for name, frames := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := fakeSender(t, t.TempDir(), frames)
			if !gpurent.IsCode(err, gpurent.CodeInvalid) {
				t.Fatalf("want invalid, got %v", err)
			}
			t.Logf("%v", err)
		})
	}
}

func TestTruncatedAndOversizedFrames(t *testing.T) {
	for name, raw := range map[string][]byte{
		"truncated": {msgEntry, 0, 0, 0, 10, 1, 2},
		"oversized": {msgEntry, 0xff, 0xff, 0xff, 0xff},
	} {
		t.Run(name, func(t *testing.T) {
			var in bytes.Buffer
			w := newFrameWriter(&in)
			w.write(msgHello, encodeHello())
			w.flush()
			in.Write(raw)
			_, err := Receive(context.Background(), t.TempDir(), &rw{&in, io.Discard}, Options{})
			if !gpurent.IsCode(err, gpurent.CodeInvalid) {
				t.Fatalf("want invalid, got %v", err)
			}
		})
	}
}

type rw struct {
	io.Reader
	io.Writer
}

func TestVersionMismatch(t *testing.T) {
	e := enc{}
	e.str(magic)
	e.uvarint(Version + 1)
	var in bytes.Buffer
	w := newFrameWriter(&in)
	w.write(msgHello, e.b)
	w.flush()
	var out bytes.Buffer
	_, err := Receive(context.Background(), t.TempDir(), &rw{&in, &out}, Options{})
	if !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), "version mismatch") {
		t.Fatalf("receiver: %v", err)
	}
	// The receiver still said its version, so the sender errs clearly too.
	in.Reset()
	w = newFrameWriter(&in)
	w.write(msgHello, e.b)
	w.flush()
	_, err = Send(context.Background(), t.TempDir(), &rw{&in, io.Discard}, Options{})
	if !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), "version mismatch") {
		t.Fatalf("sender: %v", err)
	}
	// Not our protocol at all.
	_, err = Receive(context.Background(), t.TempDir(), &rw{strings.NewReader("SSH-2.0-OpenSSH_9.6\r\n"), io.Discard}, Options{})
	if err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("garbage: %v", err)
	}
}

// FuzzDecodeFrames feeds arbitrary bytes to the frame reader and every
// payload decoder: they must return errors, never panic or allocate wildly.
func FuzzDecodeFrames(f *testing.F) {
	var seed bytes.Buffer
	w := newFrameWriter(&seed)
	w.write(msgHello, encodeHello())
	w.write(msgEntry, encodeEntry(nil, &entry{Path: "a/b", Kind: KindRegular, Perm: 0o644, Size: 5, LinkTo: -1, Xattrs: []xattr{{"user.x", []byte("y")}}}))
	w.write(msgRequest, encodeRequest(request{Index: 1, BlockSize: 2048, Blocks: 2, BasisSize: 3000}))
	w.write(msgSums, encodeSums(nil, []blockSum{{Weak: 1}, {Weak: 2}}))
	w.write(msgCopy, encodeCopy(0, 2))
	w.write(msgFileEnd, encodeFileEnd(fileEnd{Size: 5, Mtime: -1, Unstable: true}))
	w.write(msgFileSkip, encodeFileSkip(1, true, "gone"))
	w.write(msgDone, encodeDone(doneCounts{1, 2, 3, 4}))
	w.flush()
	f.Add(seed.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newFrameReader(bytes.NewReader(data))
		for {
			typ, p, err := r.read()
			if err != nil {
				return
			}
			decodeHello(p)
			decodeText(p)
			decodeEntry(p, int(typ))
			decodeListEnd(p)
			decodeRequest(p, 3)
			decodeSums(p, nil)
			decodeIndex(p, 3)
			decodeCopy(p, 3)
			decodeFileEnd(p)
			decodeFileSkip(p, 3)
			decodeDone(p)
			if x, err := decodeEntry(p, 1); err == nil {
				if checkPath(x.Path) != nil {
					t.Fatalf("decoded an entry with a bad path %q", x.Path)
				}
				again, err := decodeEntry(encodeEntry(nil, &x), 1)
				if err != nil || again.Path != x.Path || again.Size != x.Size {
					t.Fatalf("entry does not round-trip: %v", err)
				}
			}
		}
	})
}

// FuzzReceive plays arbitrary bytes as a sender: Receive must end with an
// error or success and never write outside its root.
func FuzzReceive(f *testing.F) {
	var seed bytes.Buffer
	w := newFrameWriter(&seed)
	w.write(msgHello, encodeHello())
	for _, x := range []entry{rootEntry(), {Path: "d", Kind: KindDir, Perm: 0o755, LinkTo: -1},
		{Path: "d/f", Kind: KindRegular, Perm: 0o644, Size: 3, LinkTo: -1},
		{Path: "l", Kind: KindSymlink, Target: "..", LinkTo: -1}} {
		w.write(msgEntry, encodeEntry(nil, &x))
	}
	w.write(msgListEnd, encodeListEnd(0))
	w.write(msgFileBegin, encodeIndex(2))
	w.write(msgLiteral, []byte("abc"))
	w.write(msgFileEnd, encodeFileEnd(fileEnd{Size: 3}))
	w.write(msgDeltaEnd, nil)
	w.flush()
	f.Add(seed.Bytes())
	// Device nodes and a whiteout.
	var dev bytes.Buffer
	w = newFrameWriter(&dev)
	w.write(msgHello, encodeHello())
	for _, x := range []entry{rootEntry(), {Path: "disk", Kind: KindBlockDev, Perm: 0o600, Rdev: unix.Mkdev(7, 0), LinkTo: -1},
		{Path: "mem", Kind: KindCharDev, Perm: 0o600, Rdev: unix.Mkdev(1, 1), LinkTo: -1},
		{Path: "wh", Kind: KindCharDev, LinkTo: -1}} {
		w.write(msgEntry, encodeEntry(nil, &x))
	}
	w.write(msgListEnd, encodeListEnd(0))
	w.write(msgDeltaEnd, nil)
	w.flush()
	f.Add(dev.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "root")
		os.Mkdir(dst, 0o755)
		Receive(context.Background(), dst, &rw{bytes.NewReader(data), io.Discard}, Options{})
		names, _ := os.ReadDir(parent)
		if len(names) != 1 || names[0].Name() != "root" {
			t.Fatalf("wrote outside the root: %v", names)
		}
		filepath.WalkDir(dst, func(p string, _ os.DirEntry, _ error) error {
			var st unix.Stat_t
			if unix.Lstat(p, &st) == nil {
				if k := st.Mode & unix.S_IFMT; k == unix.S_IFBLK || k == unix.S_IFCHR && st.Rdev != 0 {
					t.Fatalf("made a device node %s (%d:%d)", p, unix.Major(st.Rdev), unix.Minor(st.Rdev))
				}
			}
			return nil
		})
	})
}
