package imageref

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"

	"github.com/gpurent/gpurent"
)

// Credential is a registry user name and password.
type Credential struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// ParseCredentials reads `serve --registry-credentials FILE`: one line
// "user:password", or a JSON object {"username": "...", "password": "..."}.
// Errors never repeat the password.
func ParseCredentials(b []byte) (Credential, error) {
	if len(b) > 64<<10 {
		return Credential{}, gpurent.Errorf(gpurent.CodeInvalid, "the registry credentials file is over 64 KiB: it holds one user name and password")
	}
	t := bytes.TrimSpace(b)
	var c Credential
	if len(t) > 0 && t[0] == '{' {
		d := json.NewDecoder(bytes.NewReader(t))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil {
			return Credential{}, gpurent.Errorf(gpurent.CodeInvalid, "the registry credentials file is not JSON of the form {\"username\": \"...\", \"password\": \"...\"}")
		}
		if d.More() {
			return Credential{}, gpurent.Errorf(gpurent.CodeInvalid, "the registry credentials file holds more than one JSON object")
		}
	} else {
		line := string(t)
		if strings.ContainsAny(line, "\r\n") {
			return Credential{}, gpurent.Errorf(gpurent.CodeInvalid, "the registry credentials file must be one line user:password (or JSON)")
		}
		u, p, ok := strings.Cut(line, ":")
		if !ok {
			return Credential{}, gpurent.Errorf(gpurent.CodeInvalid, "the registry credentials file must be user:password (or JSON)")
		}
		c = Credential{Username: u, Password: p}
	}
	switch {
	case c.Username == "" || c.Password == "":
		return Credential{}, gpurent.Errorf(gpurent.CodeInvalid, "the registry credentials need both a user name and a password")
	case len(c.Username) > 255 || len(c.Password) > 1024:
		return Credential{}, gpurent.Errorf(gpurent.CodeInvalid, "the registry user name (255) or password (1024 bytes) is too long")
	case strings.IndexFunc(c.Username, func(r rune) bool { return r == ':' || unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return Credential{}, gpurent.Errorf(gpurent.CodeInvalid, "the registry user name must have no colon, space or control character")
	case strings.IndexFunc(c.Password, unicode.IsControl) >= 0:
		return Credential{}, gpurent.Errorf(gpurent.CodeInvalid, "the registry password must have no control character")
	}
	return c, nil
}
