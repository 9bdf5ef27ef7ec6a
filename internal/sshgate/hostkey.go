package sshgate

import (
	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent/internal/hostkey"
)

// LoadOrCreateHostKey returns a key of the gateway kept at path (see
// hostkey.LoadOrCreate).
func LoadOrCreateHostKey(path string) (ssh.Signer, error) {
	return hostkey.LoadOrCreate(path, "gpurent ssh gateway")
}
