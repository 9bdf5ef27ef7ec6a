package sshgate

import (
	"strings"
	"testing"
	"time"
)

func TestLoopbackDestination(t *testing.T) {
	for host, want := range map[string]string{
		"localhost": "127.0.0.1", "LOCALHOST.": "127.0.0.1", "127.0.0.1": "127.0.0.1", "127.8.9.10": "127.8.9.10",
		"::1": "::1", "[::1]": "::1", "::ffff:127.0.0.1": "127.0.0.1",
		"10.0.0.1": "", "0.0.0.0": "", "::": "", "example.com": "", "localhost.example.com": "", "": "",
		"fe80::1%eth0": "", "169.254.169.254": "", "::ffff:10.0.0.1": "", "127.0.0.1.nip.io": "",
	} {
		got, ok := loopbackDestination(host)
		if ok != (want != "") || got != want {
			t.Errorf("loopbackDestination(%q) = %q, %v; want %q", host, got, ok, want)
		}
	}
}

func TestParseProxyPath(t *testing.T) {
	type res struct {
		inst      string
		port      int
		slash, ok bool
	}
	for path, want := range map[string]res{
		"/p/i-abc/8888/":                         {"i-abc", 8888, true, true},
		"/p/i-abc/8888/lab/tree":                 {"i-abc", 8888, true, true},
		"/p/i-abc/8888":                          {"i-abc", 8888, false, true},
		"/p/i-abc/65535/":                        {"i-abc", 65535, true, true},
		"/p/i-abc/65536/":                        {},
		"/p/i-abc/0/":                            {},
		"/p/i-abc/08888/":                        {},
		"/p/i-abc/-1/":                           {},
		"/p/i-abc/x/":                            {},
		"/p/i.abc/80/":                           {},
		"/p//80/":                                {},
		"/q/i-abc/80/":                           {},
		"/p/i-abc":                               {},
		"/p/" + strings.Repeat("a", 65) + "/80/": {},
	} {
		inst, port, slash, ok := parseProxyPath(path)
		if got := (res{inst, port, slash, ok}); ok != want.ok || ok && got != want {
			t.Errorf("parseProxyPath(%q) = %+v, want %+v", path, got, want)
		}
	}
}

func TestTokens(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	tok := signToken(secret, claims{Kind: tokenLink, Instance: "i-a", Port: 8888, Account: "acc-a", Expires: now.Unix() + 60})
	if c, p := verifyToken(secret, tok, tokenLink, "i-a", 8888, now); p != tokenOK || c.Account != "acc-a" {
		t.Fatalf("valid token: %v %+v", p, c)
	}
	for name, tc := range map[string]struct {
		secret   []byte
		tok      string
		kind     string
		instance string
		port     int
		now      time.Time
		want     tokenProblem
	}{
		"other secret":   {[]byte("another secret of 32 bytes......"), tok, tokenLink, "i-a", 8888, now, tokenBad},
		"other kind":     {secret, tok, tokenCookie, "i-a", 8888, now, tokenBad},
		"expired":        {secret, tok, tokenLink, "i-a", 8888, now.Add(time.Minute), tokenExpired},
		"other port":     {secret, tok, tokenLink, "i-a", 8889, now, tokenElsewhere},
		"other instance": {secret, tok, tokenLink, "i-b", 8888, now, tokenElsewhere},
		"truncated":      {secret, tok[:len(tok)-1], tokenLink, "i-a", 8888, now, tokenBad},
		"no dot":         {secret, strings.ReplaceAll(tok, ".", ""), tokenLink, "i-a", 8888, now, tokenBad},
		"empty":          {secret, "", tokenLink, "i-a", 8888, now, tokenBad},
	} {
		if _, p := verifyToken(tc.secret, tc.tok, tc.kind, tc.instance, tc.port, tc.now); p != tc.want {
			t.Errorf("%s: %v, want %v", name, p, tc.want)
		}
	}
}

// FuzzVerifyToken: no input panics, and nothing but a token signed with the
// secret is accepted.
func FuzzVerifyToken(f *testing.F) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	valid := signToken(secret, claims{Kind: tokenLink, Instance: "i-a", Port: 80, Account: "acc", Expires: now.Unix() + 60})
	f.Add(valid)
	f.Add("")
	f.Add("e30.AAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		_, p := verifyToken(secret, tok, tokenLink, "i-a", 80, now)
		if p == tokenOK && tok != valid {
			t.Fatalf("accepted a token that was not signed: %q", tok)
		}
	})
}
