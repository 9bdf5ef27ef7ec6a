package imageref

import (
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
)

func TestParseCredentials(t *testing.T) {
	for in, want := range map[string]Credential{
		"puller:s3cret\n":   {"puller", "s3cret"},
		"puller:pa:ss:word": {"puller", "pa:ss:word"},
		`{"username": "puller", "password": "s3cret"}`:  {"puller", "s3cret"},
		"  {\"username\":\"u\",\"password\":\"p w\"}\n": {"u", "p w"},
	} {
		got, err := ParseCredentials([]byte(in))
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "nocolon", ":s3cret", "user:", "a b:s3cret", "u:s3cret\nv:other",
		`{"username":"u"}`, `{"username":"u","password":"s3cret","extra":1}`, `{"username":"u","password":"s3cret"}{}`,
		"u:s3cret\x00", strings.Repeat("x", 70<<10)} {
		_, err := ParseCredentials([]byte(in))
		if !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%q: %v, want invalid", in, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: the error repeats the password: %v", in, err)
		}
	}
}

func FuzzParseCredentials(f *testing.F) {
	for _, s := range []string{"u:p", `{"username":"u","password":"p"}`, "", "{", "u:p\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCredentials(b)
		if err != nil {
			if c != (Credential{}) {
				t.Fatal("a refusal with a credential")
			}
			return
		}
		if c.Username == "" || c.Password == "" || strings.Contains(c.Username, ":") {
			t.Fatalf("%q parsed to %+v", b, c)
		}
	})
}
