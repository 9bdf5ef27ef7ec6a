package access

import (
	"net"
	"sync"
)

// limits shares the server's connections and channels out fairly: an
// address (a container that can reach the server, say) holds at most a few
// connections that have not authenticated yet, and all of them together a
// part of the server; an instance (or a move's operation) holds at most a
// few authenticated connections and channels. So no one of them can take
// the slots the others need.
type limits struct {
	handshakesPerAddr   int
	handshakes          int
	connsPerInstance    int
	channelsPerInstance int

	mu       sync.Mutex
	preauth  map[string]int // handshakes open per remote address
	preauthN int
	conns    map[string]int // authenticated connections per user
	chans    map[string]int // open channels per user
}

func newLimits(cfg Config) *limits {
	return &limits{
		handshakesPerAddr: cfg.MaxHandshakesPerAddr, handshakes: cfg.MaxHandshakes,
		connsPerInstance: cfg.MaxConnectionsPerInstance, channelsPerInstance: cfg.MaxChannelsPerInstance,
		preauth: map[string]int{}, conns: map[string]int{}, chans: map[string]int{},
	}
}

// addrOf is the remote host of a connection (its IP), the key of its
// handshake slots.
func addrOf(nc net.Conn) string {
	a := nc.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(a); err == nil {
		return host
	}
	return a
}

// startHandshake takes a handshake slot of addr; false when addr or the
// server has too many.
func (l *limits) startHandshake(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.preauth[addr] >= l.handshakesPerAddr || l.preauthN >= l.handshakes {
		return false
	}
	l.preauth[addr]++
	l.preauthN++
	return true
}

// endHandshake gives addr's handshake slot back.
func (l *limits) endHandshake(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.preauthN--
	if l.preauth[addr]--; l.preauth[addr] <= 0 {
		delete(l.preauth, addr)
	}
}

// take takes one of user's slots in m (bounded by max); false when user
// holds them all.
func (l *limits) take(m map[string]int, max int, user string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m[user] >= max {
		return false
	}
	m[user]++
	return true
}

func (l *limits) give(m map[string]int, user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m[user]--; m[user] <= 0 {
		delete(m, user)
	}
}
