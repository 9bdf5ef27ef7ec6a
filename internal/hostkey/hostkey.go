// Package hostkey keeps an SSH server's private key in a file: made once
// (ed25519, OpenSSH format, mode 0600), then loaded on every start; a key
// file others can read is refused, as sshd refuses it. The control plane's
// gateway and every agent's access server keep theirs this way.
package hostkey

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
)

// LoadOrCreate returns the key stored at path, first creating an ed25519
// key there with comment when there is none. Two processes creating the
// key at once end up with the same one.
func LoadOrCreate(path, comment string) (ssh.Signer, error) {
	signer, err := loadHostKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return signer, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "generate an SSH host key")
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "encode the SSH host key")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "create the directory of SSH host key %s", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hostkey-*")
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "write SSH host key %s", path)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(pem.EncodeToMemory(block))
	err = errors.Join(werr, tmp.Chmod(0o600), tmp.Sync(), tmp.Close())
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "write SSH host key %s", path)
	}
	// A link, unlike a rename, never replaces a key another process has
	// just stored: the loser of that race loads the winner's key.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "store SSH host key %s", path)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return loadHostKey(path)
}

func loadHostKey(path string) (ssh.Signer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "read SSH host key %s", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid,
			"SSH host key %s is readable by others (mode %04o): chmod 600 it", path, st.Mode().Perm())
	}
	pemBytes, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "read SSH host key %s", path)
	}
	signer, err := ssh.ParsePrivateKey(pemBytes)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "SSH host key %s is not a private key", path)
	}
	return signer, nil
}
