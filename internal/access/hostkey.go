package access

import (
	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent/internal/hostkey"
)

// LoadOrCreateHostKey returns the access server's host key kept at path
// (see hostkey.LoadOrCreate).
func LoadOrCreateHostKey(path string) (ssh.Signer, error) {
	return hostkey.LoadOrCreate(path, "gpurent agent host key")
}
