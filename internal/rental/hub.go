package rental

import "sync"

// hub wakes the long polls of a host's agent when its desired state changes
// in this process. Other control-plane replicas' changes are seen by the
// poll's periodic re-read of the host's generation.
type hub struct {
	mu      sync.Mutex
	waiters map[string]chan struct{}
}

func newHub() *hub { return &hub{waiters: map[string]chan struct{}{}} }

// wait returns a channel closed at the host's next notify.
func (h *hub) wait(hostID string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.waiters[hostID]
	if !ok {
		ch = make(chan struct{})
		h.waiters[hostID] = ch
	}
	return ch
}

// notify wakes everyone waiting on the host.
func (h *hub) notify(hostID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.waiters[hostID]; ok {
		close(ch)
		delete(h.waiters, hostID)
	}
}

// notifyAll wakes every waiter, for when changes may have been missed.
func (h *hub) notifyAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, ch := range h.waiters {
		close(ch)
		delete(h.waiters, id)
	}
}
