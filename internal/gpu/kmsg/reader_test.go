package kmsg

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// recv waits for the next record. The deadline only bounds a hung test.
func recv(t *testing.T, ch <-chan Record) Record {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatal("the reader closed its channel")
		}
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no record arrived")
	}
	return Record{}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func TestReaderFollowsAFileFromItsEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kern.log")
	old := "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=old, written before the agent started\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.FixedZone("CST", 8*3600))
	r := &Reader{Path: path, Poll: 5 * time.Millisecond, Now: func() time.Time { return at }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := r.Follow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "[ 6034.5] nvidia-nvswitch: probe\n"+
		"[ 6034.6] NVRM: Xid (PCI:0000:3b:00): 79, pid=2511, name=python3, GPU has fallen off the bus.\n"+
		"[ 6034.7] NVRM: Xid (PCI:0000:ca:00): 4")
	got := recv(t, ch)
	want := Record{PCIBusID: "0000:3b:00", Xid: 79, Detail: "pid=2511, name=python3, GPU has fallen off the bus.", At: at.UTC()}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// The second line is finished later: it is read whole.
	appendTo(t, path, "8, pid=7, name=x, DBE\n")
	if got := recv(t, ch); got.PCIBusID != "0000:ca:00" || got.Xid != 48 || got.Detail != "pid=7, name=x, DBE" {
		t.Fatalf("split line gave %+v", got)
	}

	// Rotated by truncation: the reader starts over at the beginning.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	// The new content is shorter than what was read: the reader sees
	// the truncation however late it looks.
	appendTo(t, path, "NVRM: Xid (PCI:0000:18:00): 62\n")
	if got := recv(t, ch); got.PCIBusID != "0000:18:00" || got.Xid != 62 {
		t.Fatalf("after truncation: %+v", got)
	}

	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("a record after cancel")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the channel was not closed after cancel")
	}
}

func TestReaderOpenFailures(t *testing.T) {
	if _, err := (&Reader{}).Follow(context.Background()); err == nil {
		t.Error("no path: no error")
	}
	if _, err := (&Reader{Path: filepath.Join(t.TempDir(), "missing")}).Follow(context.Background()); err == nil {
		t.Error("missing file: no error")
	}
}
