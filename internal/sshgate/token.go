package sshgate

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// Token kinds: a link token is what the API hands out; a cookie token is what
// the first visit exchanges it for. Both are signed the same way but never
// accepted in place of each other.
const (
	tokenLink   = "link"
	tokenCookie = "cookie"
)

// claims is what a port-proxy token says.
type claims struct {
	Version  int    `json:"v"`
	Kind     string `json:"k"`
	Instance string `json:"i"`
	Port     int    `json:"p"`
	Account  string `json:"a"`
	Expires  int64  `json:"e"` // unix seconds
}

const tokenDomain = "gpurent port proxy v1\x00"

const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."

// decodeStrict decodes unpadded base64url, refusing stray trailing bits.
func decodeStrict(s string) ([]byte, error) { return base64.RawURLEncoding.Strict().DecodeString(s) }

// signToken returns base64url(JSON claims) "." base64url(HMAC-SHA256).
func signToken(secret []byte, c claims) string {
	c.Version = 1
	payload, _ := json.Marshal(c) // plain struct: cannot fail
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(mac(secret, p))
}

func mac(secret []byte, payload string) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(tokenDomain))
	h.Write([]byte(payload))
	return h.Sum(nil)
}

// tokenProblem says why a token is not accepted.
type tokenProblem int

const (
	tokenOK        tokenProblem = iota
	tokenBad                    // malformed or tampered: 401
	tokenExpired                // 401
	tokenElsewhere              // genuine but for another instance or port: 403
)

// verifyToken checks the signature first, then kind, expiry and scope.
func verifyToken(secret []byte, tok, kind, instance string, port int, now time.Time) (claims, tokenProblem) {
	// One spelling only: the decoder would skip newlines and ignore stray
	// trailing bits, so the alphabet and strict decoding are checked.
	if len(tok) > 4096 || strings.Trim(tok, tokenAlphabet) != "" || strings.Count(tok, ".") != 1 {
		return claims{}, tokenBad
	}
	p, sig, _ := strings.Cut(tok, ".")
	got, err := decodeStrict(sig)
	if err != nil || !hmac.Equal(got, mac(secret, p)) {
		return claims{}, tokenBad
	}
	payload, err := decodeStrict(p)
	if err != nil {
		return claims{}, tokenBad
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil || c.Version != 1 || c.Kind != kind || c.Account == "" {
		return claims{}, tokenBad
	}
	if now.Unix() >= c.Expires {
		return c, tokenExpired
	}
	if c.Instance != instance || c.Port != port {
		return c, tokenElsewhere
	}
	return c, tokenOK
}
