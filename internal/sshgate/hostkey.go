package sshgate

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gpurent/gpurent"
	"golang.org/x/crypto/ssh"
)

// LoadOrCreateHostKey returns the private key stored at path, creating an
// ed25519 key there (mode 0600, OpenSSH format) when there is none. Like sshd
// it refuses a key file that group or others can read. Creation is atomic and
// never replaces a key another process wrote first.
func LoadOrCreateHostKey(path string) (ssh.Signer, error) {
	signer, err := loadHostKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return signer, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "generate ssh host key")
	}
	block, err := ssh.MarshalPrivateKey(priv, "gpurent ssh gateway")
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "encode ssh host key")
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "create directory for ssh host key %s", path)
	}
	tmp, err := os.CreateTemp(dir, ".hostkey-*")
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "write ssh host key %s", path)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "write ssh host key %s", path)
	}
	if _, err := tmp.Write(pem.EncodeToMemory(block)); err != nil {
		tmp.Close()
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "write ssh host key %s", path)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "write ssh host key %s", path)
	}
	if err := tmp.Close(); err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "write ssh host key %s", path)
	}
	// A hard link never replaces an existing file: if another replica won
	// the race, use its key.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "write ssh host key %s", path)
	}
	return loadHostKey(path)
}

func loadHostKey(path string) (ssh.Signer, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "read ssh host key %s", path)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "read ssh host key %s", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid,
			"ssh host key %s is readable by others (mode %04o); run chmod 600 on it", path, st.Mode().Perm())
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "read ssh host key %s", path)
	}
	signer, err := ssh.ParsePrivateKey(data)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "ssh host key %s is not a valid unencrypted private key", path)
	}
	return signer, nil
}
