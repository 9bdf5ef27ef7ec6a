package app

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ratelimit"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// from is an HTTP client whose connections come from the loopback address
// src (127.0.0.0/8 is all this machine's), so that a test can be several
// clients.
func from(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func apiLogin(t *testing.T, c *http.Client, s *Server, email, password string) *http.Response {
	t.Helper()
	body := `{"email":"` + email + `","password":"` + password + `"}`
	resp, err := c.Post(s.URL+"/api/v1/auth/login", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestCredentialRateLimits: 100 rapid API sign-ins with a wrong password
// from one address get 429 after the limit; the owner signing in from
// another address still gets in; and the console's sign-in form counts in
// the same buckets as the API (guesses through one are refused by the
// other). The limiter's clock stands still, so that no bucket refills
// while the test runs.
func TestCredentialRateLimits(t *testing.T) {
	ctx := context.Background()
	frozen := time.Now()
	s, err := StartServer(ctx, ServerConfig{Store: storetest.SQLite(t), Listen: "127.0.0.1:0", JoinToken: "join-limits",
		BcryptCost: 4, HostTimeout: time.Hour, RateLimits: ratelimit.Config{Now: func() time.Time { return frozen }}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const email, password = "victim@limits.example", "the-right-password"
	if _, err := s.Auth.CreateAccount(ctx, email, "victim", password, gpurent.RoleCustomer, 0); err != nil {
		t.Fatal(err)
	}
	attacker := from("127.0.0.1")
	var statuses []int
	for i := 0; i < 100; i++ {
		resp := apiLogin(t, attacker, s, email, "guess-"+string(rune('a'+i%26)))
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Fatal("a 429 without Retry-After")
		}
	}
	limited := 0
	for i, st := range statuses {
		switch {
		case st == http.StatusTooManyRequests:
			limited++
		case st != http.StatusUnauthorized || limited > 0:
			t.Fatalf("attempt %d: status %d after %d refusals; statuses %v", i+1, st, limited, statuses)
		}
	}
	if limited != 90 {
		t.Fatalf("%d of 100 guesses refused with 429, want 90 (10 allowed): %v", limited, statuses)
	}
	// The right password from the attacker's address is refused too: no
	// guess more, not even a right one.
	if resp := apiLogin(t, attacker, s, email, password); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the attacker's address after the limit: %d", resp.StatusCode)
	}
	// The owner, elsewhere, signs in.
	if resp := apiLogin(t, from("127.0.0.2"), s, email, password); resp.StatusCode != http.StatusOK {
		t.Fatalf("the owner from another address: %d", resp.StatusCode)
	}

	// The console and the API share the counts: ten wrong passwords on
	// the console's form from a third address leave the API nothing.
	console := from("127.0.0.3")
	csrf := strings.Repeat("c", 43)
	for i := 0; i < 10; i++ {
		form := url.Values{"email": {email}, "password": {"console-guess"}, "_csrf": {csrf}}
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "gpurent_csrf", Value: csrf})
		resp, err := console.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("console guess %d: status %d", i+1, resp.StatusCode)
		}
	}
	if resp := apiLogin(t, console, s, email, "api-guess"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("an API guess after ten console guesses from the address: %d, want 429", resp.StatusCode)
	}
}
