package pid1

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOthersLeft reads a procfs: the init itself, non-process entries
// and zombies do not count; any other process does.
func TestOthersLeft(t *testing.T) {
	proc := t.TempDir()
	write := func(pid, stat string) {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := &init1{cfg: Config{Procfs: proc}}
	write("1", "1 (init) S 0")
	write("self", "1 (init) S 0")
	write("sys", "")
	write("57", "57 (a (b) c) Z 1")
	if in.othersLeft() {
		t.Fatal("the init, non-process entries and a zombie counted")
	}
	write("58", "58 (jupyter) S 0")
	if !in.othersLeft() {
		t.Fatal("a running process not counted")
	}
}
