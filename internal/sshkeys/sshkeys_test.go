package sshkeys_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/sshkeys"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

func authorized(t *testing.T, pub any, comment string) string {
	t.Helper()
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " " + comment
}

func TestParse(t *testing.T) {
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	good := authorized(t, edPub, "li@lab")
	key, comment, fp, err := sshkeys.Parse("  " + good + "\n")
	if err != nil || comment != "li@lab" || !strings.HasPrefix(fp, "SHA256:") || key.Type() != ssh.KeyAlgoED25519 {
		t.Fatalf("parse: %v %q %q %v", key, comment, fp, err)
	}
	for _, c := range []struct{ name, text, msg string }{
		{"empty", " ", "empty"},
		{"private", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----", "private key"},
		{"garbage", "hello world", "not an OpenSSH public key"},
		{"options", `command="rm -rf /" ` + good, "options"},
		{"two keys", good + "\n" + good, "one key at a time"},
		{"small RSA", authorized(t, &small.PublicKey, "old"), "at least 2048 bits"},
	} {
		_, _, _, err := sshkeys.Parse(c.text)
		if !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want invalid saying %q", c.name, err, c.msg)
		}
	}
}

func TestAddListDeleteAndOwner(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	svc := sshkeys.New(st, nil)
	alice := storetest.SeedAccount(t, st, "alice@example.com")
	bob := storetest.SeedAccount(t, st, "bob@example.com")
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	text := authorized(t, edPub, "alice@laptop")
	k, err := svc.Add(ctx, alice, text, "")
	if err != nil || k.Name != "alice@laptop" {
		t.Fatalf("add: %+v %v", k, err)
	}
	again, err := svc.Add(ctx, alice, text, "other name")
	if err != nil || again.ID != k.ID {
		t.Fatalf("the same key again: %+v %v, want the first", again, err)
	}
	if _, err := svc.Add(ctx, bob, text, ""); !gpurent.IsCode(err, gpurent.CodeConflict) || !strings.Contains(err.Error(), "another account") {
		t.Fatalf("alice's key on bob's account: %v", err)
	}
	pub, _ := ssh.NewPublicKey(edPub)
	if id, err := svc.AccountForKey(ctx, pub); err != nil || id != alice.ID {
		t.Fatalf("account for the key: %q %v", id, err)
	}
	list, err := svc.List(ctx, alice)
	if err != nil || len(list) != 1 || list[0].LastUsedAt == nil {
		t.Fatalf("list after use: %+v %v", list, err)
	}
	if err := svc.Delete(ctx, bob, k.Fingerprint); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("bob deletes alice's key: %v", err)
	}
	if err := svc.Delete(ctx, alice, k.Fingerprint); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AccountForKey(ctx, pub); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("a deleted key still names an account: %v", err)
	}
	if _, err := svc.Add(ctx, nil, text, ""); !gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		t.Fatalf("signed out: %v", err)
	}
}
