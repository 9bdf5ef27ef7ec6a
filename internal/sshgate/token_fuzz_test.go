package sshgate

import (
	"encoding/base64"
	"testing"
	"time"
)

// FuzzTokenClaims signs arbitrary claim bytes with the proxy's secret, so
// that the decoding behind the signature check is what is fuzzed (a random
// token never gets past the signature): nothing panics, a token is
// accepted only for its kind, instance, port and account and before it
// expires, and an accepted token's claims sign to a token accepted alike.
func FuzzTokenClaims(f *testing.F) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	f.Add([]byte(`{"v":1,"k":"link","i":"i-a","p":80,"a":"acc","e":1800000060}`))
	f.Add([]byte(`{"v":1,"k":"cookie","i":"i-a","p":80,"a":"acc","e":1800000060}`))
	f.Add([]byte(`{"v":1,"k":"link","i":"i-a","p":80,"a":"","e":1800000060}`))
	f.Add([]byte(`{"v":1,"k":"link","i":"i-a","p":80.5,"a":"acc","e":1e30}`))
	f.Add([]byte(`{"v":1,"k":"link","i":"i-a","p":80,"a":"acc","e":1800000060,"k":"cookie"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte("\xff"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		p := base64.RawURLEncoding.EncodeToString(payload)
		tok := p + "." + base64.RawURLEncoding.EncodeToString(mac(secret, p))
		c, problem := verifyToken(secret, tok, tokenLink, "i-a", 80, now)
		if problem != tokenOK {
			return
		}
		if c.Version != 1 || c.Kind != tokenLink || c.Instance != "i-a" || c.Port != 80 || c.Account == "" || c.Expires <= now.Unix() {
			t.Fatalf("accepted claims %+v from %q", c, payload)
		}
		again, problem := verifyToken(secret, signToken(secret, c), tokenLink, "i-a", 80, now)
		if problem != tokenOK || again != c {
			t.Fatalf("claims %+v re-signed: %+v, %v", c, again, problem)
		}
		if _, problem := verifyToken([]byte("another secret, 32 bytes long..."), tok, tokenLink, "i-a", 80, now); problem == tokenOK {
			t.Fatalf("accepted under another secret: %q", payload)
		}
	})
}
