// Package sshkeys keeps the public keys customers register to reach their
// instances over SSH: it parses and checks a key (authorized_keys form),
// computes the fingerprint OpenSSH shows, and names the account a key
// belongs to for the SSH gateway. One key may be registered on several
// accounts: public keys are public, so registering one proves nothing, and
// a squatter who registers someone else's key must not lock its owner out.
// The gateway resolves a login by the instance it names and the key, and
// only the instance owner's registration of the key reaches the instance.
package sshkeys

import (
	"context"
	"crypto/rsa"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
)

// MaxKeysPerAccount bounds how many keys one account registers.
const MaxKeysPerAccount = 50

// MinRSABits is the smallest RSA key accepted (OpenSSH refuses less than
// 1024; 2048 is today's floor).
const MinRSABits = 2048

// Store is what the key service reads and writes: the accounts' SSH keys,
// and the instances whose access it checks.
type Store interface {
	gpurent.SSHKeyStore
	gpurent.InstanceStore
}

// Service registers and finds keys. It is safe for concurrent use.
type Service struct {
	store Store
	now   func() time.Time
}

// New makes the service (now nil: time.Now).
func New(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// Parse reads one public key in authorized_keys form ("ssh-ed25519 AAAA...
// comment"; options are refused) and checks its type and size. It answers
// the key, its comment and its SHA256 fingerprint.
func Parse(text string) (ssh.PublicKey, string, string, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, "", "", gpurent.Errorf(gpurent.CodeInvalid, "the public key is empty")
	}
	if strings.Contains(text, "PRIVATE KEY") {
		return nil, "", "", gpurent.Errorf(gpurent.CodeInvalid, "this is a private key: send the .pub file, and keep the private key to yourself")
	}
	key, comment, options, rest, err := ssh.ParseAuthorizedKey([]byte(text))
	if err != nil {
		return nil, "", "", gpurent.Errorf(gpurent.CodeInvalid, "not an OpenSSH public key (like the contents of ~/.ssh/id_ed25519.pub)")
	}
	if len(options) > 0 {
		return nil, "", "", gpurent.Errorf(gpurent.CodeInvalid, "authorized_keys options (%s) are not accepted: send the bare key", strings.Join(options, ","))
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, "", "", gpurent.Errorf(gpurent.CodeInvalid, "one key at a time, please")
	}
	switch key.Type() {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoSKED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoSKECDSA256:
	case ssh.KeyAlgoRSA:
		ck, ok := key.(ssh.CryptoPublicKey)
		if !ok {
			return nil, "", "", gpurent.Errorf(gpurent.CodeInvalid, "cannot read the RSA key")
		}
		if rk, ok := ck.CryptoPublicKey().(*rsa.PublicKey); !ok || rk.N.BitLen() < MinRSABits {
			return nil, "", "", gpurent.Errorf(gpurent.CodeInvalid, "RSA keys must have at least %d bits; ed25519 is better (ssh-keygen -t ed25519)", MinRSABits)
		}
	default:
		return nil, "", "", gpurent.Errorf(gpurent.CodeInvalid, "key type %s is not accepted: use ed25519, ECDSA or RSA of %d bits or more", key.Type(), MinRSABits)
	}
	return key, comment, ssh.FingerprintSHA256(key), nil
}

// Add registers a key on the account. name defaults to the key's comment.
func (s *Service) Add(ctx context.Context, acc *gpurent.Account, text, name string) (*gpurent.SSHKey, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "not signed in")
	}
	key, comment, fp, err := Parse(text)
	if err != nil {
		return nil, err
	}
	name = strings.TrimSpace(name)
	if name == "" {
		name = comment
	}
	if len(name) > 100 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "a key's name is at most 100 characters")
	}
	have, err := s.store.ListSSHKeys(ctx, acc.ID)
	if err != nil {
		return nil, err
	}
	for _, k := range have {
		if k.Fingerprint == fp {
			return &k, nil // the same key again: already there
		}
	}
	if len(have) >= MaxKeysPerAccount {
		return nil, gpurent.Errorf(gpurent.CodeConflict, "an account holds at most %d keys: remove one first", MaxKeysPerAccount)
	}
	k := &gpurent.SSHKey{AccountID: acc.ID, Name: name, Fingerprint: fp, CreatedAt: s.now().UTC(),
		PublicKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))}
	if err := s.store.AddSSHKey(ctx, k); err != nil {
		if gpurent.IsCode(err, gpurent.CodeConflict) { // a concurrent add of the same key
			return s.store.SSHKeyOfAccount(ctx, acc.ID, fp)
		}
		return nil, err
	}
	return k, nil
}

// List returns the account's keys.
func (s *Service) List(ctx context.Context, acc *gpurent.Account) ([]gpurent.SSHKey, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "not signed in")
	}
	return s.store.ListSSHKeys(ctx, acc.ID)
}

// Delete removes one of the account's keys, by id or fingerprint.
func (s *Service) Delete(ctx context.Context, acc *gpurent.Account, idOrFingerprint string) error {
	if acc == nil {
		return gpurent.Errorf(gpurent.CodeUnauthorized, "not signed in")
	}
	id := idOrFingerprint
	if strings.HasPrefix(id, "SHA256:") {
		k, err := s.store.SSHKeyOfAccount(ctx, acc.ID, id)
		if err != nil {
			return gpurent.Errorf(gpurent.CodeNotFound, "SSH key %q not found", idOrFingerprint)
		}
		id = k.ID
	}
	return s.store.DeleteSSHKey(ctx, acc.ID, id)
}

// AccountForKey names the account a login with key to instanceID (the SSH
// user name) speaks for (recording nothing: a key is looked up
// when it is merely offered; KeyUsed records a proven use): the instance owner's
// when the owner registered the key, else the oldest account that did
// (which the gateway then refuses the instance, as for any instance of
// another account). A key no account holds is not_found. The answer does
// not say whether the instance exists or whose it is, so that someone
// who offers a known public key without its private key learns nothing.
func (s *Service) AccountForKey(ctx context.Context, instanceID string, key ssh.PublicKey) (string, error) {
	fp := ssh.FingerprintSHA256(key)
	var k *gpurent.SSHKey
	in, err := s.store.InstanceByID(ctx, instanceID)
	switch {
	case err == nil:
		if k, err = s.store.SSHKeyOfAccount(ctx, in.AccountID, fp); err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return "", err
		}
	case !gpurent.IsCode(err, gpurent.CodeNotFound) && !gpurent.IsCode(err, gpurent.CodeInvalid):
		return "", err
	}
	if k == nil {
		if k, err = s.store.SSHKeyByFingerprint(ctx, fp); err != nil {
			return "", err
		}
	}
	return k.AccountID, nil
}

// KeyUsed records the last use of accountID's registration of key: call it once the client has signed
// with the key (a proven login), never for an offer.
func (s *Service) KeyUsed(ctx context.Context, accountID string, key ssh.PublicKey) error {
	k, err := s.store.SSHKeyOfAccount(ctx, accountID, ssh.FingerprintSHA256(key))
	if err != nil {
		return err
	}
	return s.store.TouchSSHKey(ctx, k.ID, s.now().UTC())
}
