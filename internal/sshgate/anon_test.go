package sshgate_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/sshgate"
	"golang.org/x/crypto/ssh"
)

// refusingSigner offers its public key but never signs: what a client that
// merely knows someone's public key can do.
type refusingSigner struct{ pub ssh.PublicKey }

func (s refusingSigner) PublicKey() ssh.PublicKey { return s.pub }
func (s refusingSigner) Sign(io.Reader, []byte) (*ssh.Signature, error) {
	return nil, errors.New("this client holds no private key")
}

// login dials the gateway as instance with signer; it reports whether the
// login succeeded.
func (h *harness) login(t *testing.T, instance string, signer ssh.Signer) bool {
	t.Helper()
	conf := &ssh.ClientConfig{User: instance, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 20 * time.Second}
	nc, err := net.DialTimeout("tcp", h.addr, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(testTimeout))
	cc, _, _, err := ssh.NewClientConn(nc, h.addr, conf)
	if err != nil {
		return false
	}
	cc.Close()
	return true
}

// TestAnonymousRefusalsAggregated: thirty logins with a key nobody
// registered, from one address, leave one audit record, not thirty (each
// would be a database row anyone can write).
func TestAnonymousRefusalsAggregated(t *testing.T) {
	h := newHarness(t, nil)
	_, stranger := newKey(t)
	for i := 0; i < 30; i++ {
		if h.login(t, instA, stranger) {
			t.Fatal("an unknown key got in")
		}
	}
	h.stop() // every connection's handling, records included, is over
	n := 0
	for _, r := range h.audit.records {
		if r.Refusal == "unknown key" {
			n++
		}
		if r.Kind == sshgate.KindLogin && r.Refusal == "unknown key" && r.AccountID != "" {
			t.Errorf("an anonymous refusal names account %q", r.AccountID)
		}
	}
	if n != 1 {
		t.Fatalf("%d audit records for 30 anonymous refusals from one address, want 1", n)
	}
}

// TestKeyUseNeedsSignature: a client that offers the owner's public key
// without signing (anyone may know it) does not make it "used"; the owner's
// signed login does.
func TestKeyUseNeedsSignature(t *testing.T) {
	h := newHarness(t, nil)
	pub := h.ownerSig.PublicKey()
	if h.login(t, instA, refusingSigner{pub}) {
		t.Fatal("a login without a signature got in")
	}
	if h.login(t, "i-nonexistent", refusingSigner{pub}) {
		t.Fatal("a login without a signature got in")
	}
	if !h.login(t, instA, h.ownerSig) {
		t.Fatal("the owner's login failed")
	}
	h.stop()
	if n := h.directory.usedCount(pub); n != 1 {
		t.Fatalf("the key was recorded used %d times, want 1 (the signed login only)", n)
	}
}
