package ratelimit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/clocktest"
	"github.com/gpurent/gpurent/internal/ratelimit"
)

func newLimiter() (*ratelimit.Limiter, *clocktest.Clock) {
	c := clocktest.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	return ratelimit.New(ratelimit.Config{Now: c.Now}), c
}

func TestPairLimitLeavesOtherAddresses(t *testing.T) {
	l, c := newLimiter()
	for i := 0; i < 10; i++ {
		if ok, _ := l.Login("Owner@Example.com", "203.0.113.9"); !ok {
			t.Fatalf("attempt %d refused", i+1)
		}
	}
	ok, wait := l.Login("owner@example.com", "203.0.113.9")
	if ok || wait <= 0 || wait > 30*time.Second {
		t.Fatalf("11th attempt: %v, wait %v; want refused within 30 s", ok, wait)
	}
	if ok, _ := l.Login("owner@example.com", "198.51.100.7"); !ok {
		t.Fatal("another address was locked out")
	}
	if ok, _ := l.Login("other@example.com", "203.0.113.9"); !ok {
		t.Fatal("another e-mail from the address was refused")
	}
	c.Advance(30 * time.Second)
	if ok, _ := l.Login("owner@example.com", "203.0.113.9"); !ok {
		t.Fatal("no attempt after the bucket refilled one")
	}
}

// TestEmailBucketSparesTheOwner: guesses from many addresses fill the
// e-mail's bucket and new addresses are refused, but the owner's usual
// address (it signed in before) still gets in.
func TestEmailBucketSparesTheOwner(t *testing.T) {
	l, _ := newLimiter()
	if ok, _ := l.Login("owner@example.com", "192.0.2.1"); !ok {
		t.Fatal("first sign-in refused")
	}
	l.Succeeded("owner@example.com", "192.0.2.1")
	refused := 0
	for i := 0; i < 200; i++ {
		if ok, _ := l.Login("owner@example.com", fmt.Sprintf("10.0.%d.%d", i/250, i%250)); !ok {
			refused++
		}
	}
	// The owner's first sign-in took one of the bucket's 50.
	if refused != 151 {
		t.Fatalf("%d of 200 guesses from distinct addresses refused, want 151", refused)
	}
	if ok, _ := l.Login("owner@example.com", "10.9.9.9"); ok {
		t.Fatal("a new address got through the full e-mail bucket")
	}
	if ok, _ := l.Login("owner@example.com", "192.0.2.1"); !ok {
		t.Fatal("the owner's usual address was locked out")
	}
}

func TestAddressBucket(t *testing.T) {
	l, _ := newLimiter()
	for i := 0; i < 60; i++ {
		if ok, _ := l.Login(fmt.Sprintf("u%d@example.com", i), "2001:db8:1:2::10"); !ok {
			t.Fatalf("attempt %d refused", i+1)
		}
	}
	// The same /64 is the same client; sign-ups count too.
	if ok, _ := l.Address("2001:db8:1:2::99"); ok {
		t.Fatal("the address's 61st check went through")
	}
	if ok, _ := l.Address("2001:db8:1:3::10"); !ok {
		t.Fatal("another /64 was refused")
	}
	if ok, _ := l.Address("::ffff:192.0.2.5"); !ok {
		t.Fatal("an IPv4 client was refused")
	}
}

func TestBoundedMemory(t *testing.T) {
	c := clocktest.New(time.Now())
	l := ratelimit.New(ratelimit.Config{Now: c.Now, MaxKeys: 100})
	for i := 0; i < 10_000; i++ {
		l.Key(fmt.Sprint(i))
	}
	// Still answers, and a fresh key is allowed.
	if ok, _ := l.Key("fresh"); !ok {
		t.Fatal("a fresh key was refused")
	}
}
