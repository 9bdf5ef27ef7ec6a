package gpurent

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// ID prefixes, so that an id says what it names.
const (
	PrefixAccount    = "acc"
	PrefixToken      = "tok"
	PrefixHost       = "host"
	PrefixInstance   = "i"
	PrefixAllocation = "alloc"
	PrefixVolume     = "vol"
	PrefixEvent      = "evt"
	PrefixPrice      = "price"
	PrefixAcademic   = "acad"
)

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewID returns prefix-XXXXXXXXXXXXXXXX: 80 random bits in lower-case
// Crockford-style base32, safe in URLs, container names and file names.
func NewID(prefix string) string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("gpurent: crypto/rand failed: " + err.Error())
	}
	return prefix + "-" + idEncoding.EncodeToString(b[:])
}

// RandomSecret returns n random bytes encoded the same way, for tokens.
func RandomSecret(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("gpurent: crypto/rand failed: " + err.Error())
	}
	return strings.ToLower(idEncoding.EncodeToString(b))
}
