// Package keymutex is the one per-key mutex of gpurent: a set of mutexes
// named by strings, each made when first wanted and dropped when nobody
// holds or waits for it, so the set stays as small as the work in flight.
// It serialises work within one process only (an instance's runtime calls,
// requests sharing an idempotency key); across processes the database or the
// container daemon keeps the effect single.
package keymutex

import (
	"context"
	"sync"
)

// Mutex is a mutex per key. The zero value is ready; a Mutex must not be
// copied after first use.
type Mutex struct {
	mu   sync.Mutex
	keys map[string]*entry
}

// entry is one key's lock: holding the key is having sent into sem.
type entry struct {
	sem  chan struct{} // capacity 1
	refs int           // holders and waiters
}

// Lock takes key, waiting as long as it takes, and returns its release,
// which must be called exactly once.
func (m *Mutex) Lock(key string) (unlock func()) {
	e := m.acquire(key)
	e.sem <- struct{}{}
	return m.unlocker(key, e)
}

// LockContext takes key, waiting at most until ctx ends, and returns its
// release; when ctx ends first it returns ctx's error and holds nothing.
func (m *Mutex) LockContext(ctx context.Context, key string) (unlock func(), err error) {
	e := m.acquire(key)
	select {
	case e.sem <- struct{}{}:
		return m.unlocker(key, e), nil
	case <-ctx.Done():
		m.release(key, e)
		return nil, ctx.Err()
	}
}

// Len is how many keys are held or waited for.
func (m *Mutex) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.keys)
}

// acquire counts one more holder or waiter of key's entry, making it.
func (m *Mutex) acquire(key string) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys == nil {
		m.keys = make(map[string]*entry)
	}
	e := m.keys[key]
	if e == nil {
		e = &entry{sem: make(chan struct{}, 1)}
		m.keys[key] = e
	}
	e.refs++
	return e
}

// release counts one holder or waiter fewer, dropping the entry at none.
func (m *Mutex) release(key string, e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(m.keys, key)
	}
}

func (m *Mutex) unlocker(key string, e *entry) func() {
	return func() {
		<-e.sem
		m.release(key, e)
	}
}
