package docker

import "testing"

// TestPullProgressText: the pull log sums the layers of a pull in
// progress, says when it unpacks, and forgets the pull when it ends.
func TestPullProgressText(t *testing.T) {
	r := &Runtime{}
	if _, ok := r.PullProgress("x:1"); ok {
		t.Fatal("progress of no pull")
	}
	done := r.pulls.start("x:1")
	if m, ok := r.PullProgress("x:1"); !ok || m != "pulling image x:1: starting" {
		t.Errorf("before any layer: %q %v", m, ok)
	}
	r.pulls.layer("x:1", "a", "Downloading", 10<<20, 40<<20)
	r.pulls.layer("x:1", "b", "Downloading", 2<<20, 8<<20)
	r.pulls.layer("y:1", "c", "Downloading", 1, 2) // another pull: none in progress
	if m, _ := r.PullProgress("x:1"); m != "pulling image x:1: 12.0 MiB of 48.0 MiB (25%)" {
		t.Errorf("downloading: %q", m)
	}
	r.pulls.layer("x:1", "a", "Extracting", 0, 0)
	r.pulls.layer("x:1", "b", "Extracting", 0, 0)
	if m, _ := r.PullProgress("x:1"); m != "pulling image x:1: unpacking 48.0 MiB" {
		t.Errorf("unpacking: %q", m)
	}
	done()
	if _, ok := r.PullProgress("x:1"); ok {
		t.Error("a finished pull still in progress")
	}
}
