package keymutex_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/gpurent/gpurent/internal/keymutex"
)

// TestOneHolderPerKey: never two holders of one key at once, whichever way
// it is taken, and no entry left when all are done.
func TestOneHolderPerKey(t *testing.T) {
	var m keymutex.Mutex
	var mu sync.Mutex
	inside := map[string]int{}
	var wg sync.WaitGroup
	for i := range 60 {
		key := []string{"a", "b", "c"}[i%3]
		wg.Go(func() {
			var unlock func()
			if i%2 == 0 {
				unlock = m.Lock(key)
			} else {
				var err error
				if unlock, err = m.LockContext(t.Context(), key); err != nil {
					t.Error(err)
					return
				}
			}
			mu.Lock()
			inside[key]++
			if inside[key] > 1 {
				t.Errorf("two holders of %s", key)
			}
			mu.Unlock()
			runtime.Gosched() // let another holder in, were the lock broken
			mu.Lock()
			inside[key]--
			mu.Unlock()
			unlock()
		})
	}
	wg.Wait()
	if n := m.Len(); n != 0 {
		t.Errorf("%d entries left", n)
	}
}

// TestKeysAreIndependent: holding one key does not hold another.
func TestKeysAreIndependent(t *testing.T) {
	var m keymutex.Mutex
	unlockA := m.Lock("a")
	unlockB, err := m.LockContext(t.Context(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Len(); n != 2 {
		t.Errorf("Len = %d, want 2", n)
	}
	unlockB()
	unlockA()
	if n := m.Len(); n != 0 {
		t.Errorf("%d entries left", n)
	}
}

// TestLockContextGivesUp: a waiter whose context ends gets its error, holds
// nothing and leaves nothing; the holder's release still frees the key.
func TestLockContextGivesUp(t *testing.T) {
	var m keymutex.Mutex
	unlock := m.Lock("x")
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if u, err := m.LockContext(done, "x"); !errors.Is(err, context.Canceled) || u != nil {
		t.Errorf("LockContext with a done context = %v, %v; want context.Canceled and no release", u != nil, err)
	}
	if n := m.Len(); n != 1 {
		t.Errorf("Len = %d while held, want 1", n)
	}
	unlock()
	if n := m.Len(); n != 0 {
		t.Errorf("%d entries left", n)
	}
	// A waiter that is let in before its context ends takes the key.
	unlock = m.Lock("x")
	got := make(chan error, 1)
	go func() {
		u, err := m.LockContext(t.Context(), "x")
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	if err := <-got; err != nil {
		t.Errorf("waiter: %v", err)
	}
	if n := m.Len(); n != 0 {
		t.Errorf("%d entries left", n)
	}
}
