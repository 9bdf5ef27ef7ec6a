package rental

import "sync"

// keyLocks serialises requests that share an idempotency key in this
// process, so a retry waits for the first attempt's claim instead of
// racing it for GPUs. Across control-plane replicas the database's unique
// (account, key) keeps the effect single.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	mu    sync.Mutex
	users int
}

// lock takes the lock of key and returns its release.
func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
