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

func TestParsePortHost(t *testing.T) {
	type res struct {
		inst string
		port int
		ok   bool
	}
	for host, want := range map[string]res{
		"i-abc-8888.localhost":                         {"i-abc", 8888, true},
		"i-abc-8888.localhost:8080":                    {"i-abc", 8888, true},
		"I-ABC-8888.LocalHost.":                        {"i-abc", 8888, true},
		"i-abc-65535.localhost":                        {"i-abc", 65535, true},
		"i-0123456789abcdef-6006.localhost:443":        {"i-0123456789abcdef", 6006, true},
		"i-abc-65536.localhost":                        {},
		"i-abc-0.localhost":                            {},
		"i-abc-08888.localhost":                        {},
		"i-abc--1.localhost":                           {},
		"i-abc-x.localhost":                            {},
		"i_abc-80.localhost":                           {},
		"-80.localhost":                                {},
		"80.localhost":                                 {},
		"i-abc-80.localhost.example.com":               {},
		"i-abc-80.notlocalhost":                        {},
		"x.i-abc-80.localhost":                         {},
		"localhost":                                    {},
		".localhost":                                   {},
		"i-abc-80":                                     {},
		"":                                             {},
		"[::1]:80":                                     {},
		"i-abc-80.localhost:80:80":                     {},
		strings.Repeat("a", 61) + "-80.localhost":      {},
		"i-abc-8888.localhost%00":                      {},
		"i-abc-8888.localhost\x00.example":             {},
		"i-\u0430bc-8888.localhost":                    {},
		"i-abc-\uff18\uff18.localhost":                 {},
		strings.Repeat("a", 57) + "-80.localhost:8080": {strings.Repeat("a", 57), 80, true},
	} {
		inst, port, ok := parsePortHost(host, "localhost")
		if got := (res{inst, port, ok}); ok != want.ok || ok && got != want {
			t.Errorf("parsePortHost(%q) = %+v, want %+v", host, got, want)
		}
	}
}

// FuzzParsePortHost: no Host header panics the parser, and what it accepts
// names exactly the host the proxy would make for it.
func FuzzParsePortHost(f *testing.F) {
	for _, s := range []string{"i-abc-8888.localhost:8080", "I-ABC-1.PORTS.EXAMPLE.", "localhost", "a-1.b.ports.example", "-1.ports.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		for _, domain := range []string{"localhost", "ports.example"} {
			inst, port, ok := parsePortHost(host, domain)
			if !ok {
				continue
			}
			p := &PortProxy{domain: domain}
			if got := p.Host(inst, port); got != hostName(host) || !p.Owns(host) || port < 1 || port > 65535 || !validLabel(inst) {
				t.Fatalf("parsePortHost(%q) = %q %d: host %q", host, inst, port, got)
			}
		}
	})
}

func TestHostOnlyCookie(t *testing.T) {
	for line, want := range map[string]string{
		"a=1":                              "a=1",
		"a=1; Path=/; HttpOnly":            "a=1; Path=/; HttpOnly",
		"a=1; Domain=localhost; Path=/":    "a=1; Path=/",
		"a=1;domain=.example.com;Secure":   "a=1;Secure",
		"a=1; DOMAIN = x; Max-Age=5":       "a=1; Max-Age=5",
		"gpurent_session=evil":             "",
		"gpurent_csrf=x; Path=/":           "",
		" Gpurent_Port=x":                  "",
		"__Host-gpurent_session=x; Secure": "",
		"__Secure-gpurent_lang=x":          "",
		"gpurent=x":                        "",
		"=x":                               "",
		"novalue":                          "",
	} {
		got, ok := hostOnlyCookie(line)
		if ok != (want != "") || got != want {
			t.Errorf("hostOnlyCookie(%q) = %q, %v; want %q", line, got, ok, want)
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
