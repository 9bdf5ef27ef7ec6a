// Package ratelimit is the one limiter of credential checks (sign-in,
// sign-up, password resets) that the API and the console share, so that
// counts made through one hold on the other.
//
// It keeps token buckets, keyed so that nobody can lock another out:
//
//   - per client address: every bcrypt check an address causes (sign-in,
//     sign-up, reset), which bounds the CPU one address can burn;
//   - per (e-mail, address): password guesses against one account from one
//     address;
//   - per e-mail, looser: guesses against one account from everywhere. It
//     does not apply to an address that signed in to that account before
//     (its owner's usual one), so that an attacker who fills it from other
//     addresses does not keep the owner out.
//
// IPv6 clients are keyed by their /64, which one host usually holds whole.
// Counts are per process: each control-plane replica keeps its own.
package ratelimit

import (
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Rate is a token bucket: Burst attempts at once, then one per Every.
type Rate struct {
	Burst int
	Every time.Duration
}

// Config tunes a Limiter; zero fields take the defaults.
type Config struct {
	// Address bounds the credential checks of one client address
	// (default: 60 at once, then one a second).
	Address Rate
	// Pair bounds sign-in attempts for one e-mail from one address
	// (default: 10 at once, then one every 30 s).
	Pair Rate
	// Email bounds sign-in attempts for one e-mail from addresses that
	// never signed in to it (default: 50 at once, then one every 20 s).
	Email Rate
	// Known is how long an address that signed in stays exempt from its
	// e-mail's bucket (default 30 days), and KnownPerEmail how many such
	// addresses each e-mail keeps (default 8).
	Known         time.Duration
	KnownPerEmail int
	// MaxKeys bounds the buckets kept (default 100,000); past it, full
	// buckets are forgotten.
	MaxKeys int
	Now     func() time.Time
}

// Limiter counts attempts. Make it with New; it is safe for concurrent use.
type Limiter struct {
	cfg Config

	mu      sync.Mutex
	buckets map[string]*bucket
	known   map[string]map[string]time.Time // e-mail → address → last sign-in
}

type bucket struct {
	rate   Rate
	tokens float64
	at     time.Time
}

// New makes a limiter.
func New(cfg Config) *Limiter {
	def := func(r *Rate, burst int, every time.Duration) {
		if r.Burst <= 0 || r.Every <= 0 {
			*r = Rate{Burst: burst, Every: every}
		}
	}
	def(&cfg.Address, 60, time.Second)
	def(&cfg.Pair, 10, 30*time.Second)
	def(&cfg.Email, 50, 20*time.Second)
	if cfg.Known <= 0 {
		cfg.Known = 30 * 24 * time.Hour
	}
	if cfg.KnownPerEmail <= 0 {
		cfg.KnownPerEmail = 8
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = 100_000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Limiter{cfg: cfg, buckets: map[string]*bucket{}, known: map[string]map[string]time.Time{}}
}

// AddressKey is the key of a client address: an IPv4 address, an IPv6
// address's /64, or the text itself when it is no address.
func AddressKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

func normEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// Login records a sign-in attempt (a password check) for email from the
// client address addr. It reports whether it may go ahead and, if not, how
// long until it may; a refused attempt is not counted.
func (l *Limiter) Login(email, addr string) (bool, time.Duration) {
	email, addr = normEmail(email), AddressKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.cfg.Now()
	keys := []struct {
		key  string
		rate Rate
	}{
		{"a\x00" + addr, l.cfg.Address},
		{"p\x00" + email + "\x00" + addr, l.cfg.Pair},
	}
	if !l.isKnown(email, addr, now) {
		keys = append(keys, struct {
			key  string
			rate Rate
		}{"e\x00" + email, l.cfg.Email})
	}
	bs := make([]*bucket, len(keys))
	var wait time.Duration
	for i, k := range keys {
		bs[i] = l.bucket(k.key, k.rate, now)
		if w := bs[i].wait(); w > wait {
			wait = w
		}
	}
	if wait > 0 {
		return false, wait
	}
	for _, b := range bs {
		b.tokens--
	}
	return true, 0
}

// Succeeded records that email signed in from addr: that address is then
// exempt from the e-mail's own bucket.
func (l *Limiter) Succeeded(email, addr string) {
	email, addr = normEmail(email), AddressKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.cfg.Now()
	m := l.known[email]
	if m == nil {
		if len(l.known) >= l.cfg.MaxKeys {
			l.forgetKnown(now)
		}
		m = map[string]time.Time{}
		l.known[email] = m
	}
	m[addr] = now
	for len(m) > l.cfg.KnownPerEmail { // drop the oldest
		var oldest string
		for a, t := range m {
			if oldest == "" || t.Before(m[oldest]) {
				oldest = a
			}
		}
		delete(m, oldest)
	}
}

// Address records a credential check that names no account (a sign-up,
// a reset with its link's secret) from addr.
func (l *Limiter) Address(addr string) (bool, time.Duration) {
	return l.take("a\x00"+AddressKey(addr), l.cfg.Address)
}

// Key records an attempt in a bucket of its own at the pair rate: e.g.
// reset mails asked for one e-mail, so that nobody floods its inbox.
func (l *Limiter) Key(key string) (bool, time.Duration) {
	return l.take("k\x00"+key, l.cfg.Pair)
}

func (l *Limiter) take(key string, r Rate) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(key, r, l.cfg.Now())
	if w := b.wait(); w > 0 {
		return false, w
	}
	b.tokens--
	return true, 0
}

func (l *Limiter) isKnown(email, addr string, now time.Time) bool {
	t, ok := l.known[email][addr]
	return ok && now.Sub(t) < l.cfg.Known
}

// bucket returns key's bucket refilled to now, making it full if new.
func (l *Limiter) bucket(key string, r Rate, now time.Time) *bucket {
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= l.cfg.MaxKeys {
			l.forgetFull(now)
		}
		b = &bucket{rate: r, tokens: float64(r.Burst), at: now}
		l.buckets[key] = b
		return b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(float64(b.rate.Burst), b.tokens+float64(d)/float64(b.rate.Every))
		b.at = now
	}
	return b
}

// wait is how long until the bucket holds a whole token (0: it does).
func (b *bucket) wait() time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(b.rate.Every))
}

// forgetFull drops the buckets that have refilled (they are the same as
// none); under a flood of more keys than that, half of the rest go too, so
// that memory stays bounded.
func (l *Limiter) forgetFull(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+float64(now.Sub(b.at))/float64(b.rate.Every) >= float64(b.rate.Burst) {
			delete(l.buckets, k)
		}
	}
	for k := range l.buckets {
		if len(l.buckets) < l.cfg.MaxKeys/2 {
			break
		}
		delete(l.buckets, k)
	}
}

func (l *Limiter) forgetKnown(now time.Time) {
	for e, m := range l.known {
		for a, t := range m {
			if now.Sub(t) >= l.cfg.Known {
				delete(m, a)
			}
		}
		if len(m) == 0 {
			delete(l.known, e)
		}
	}
	for e := range l.known {
		if len(l.known) < l.cfg.MaxKeys/2 {
			break
		}
		delete(l.known, e)
	}
}
