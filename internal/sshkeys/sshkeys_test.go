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
	in := storetest.SeedInstance(t, st, alice.ID, "alice-1")
	pub, _ := ssh.NewPublicKey(edPub)
	if id, err := svc.AccountForKey(ctx, in.ID, pub); err != nil || id != alice.ID {
		t.Fatalf("account for the key: %q %v", id, err)
	}
	// A lookup (the key merely offered) is no use of it.
	list, err := svc.List(ctx, alice)
	if err != nil || len(list) != 1 || list[0].LastUsedAt != nil {
		t.Fatalf("list after a lookup: %+v %v", list, err)
	}
	if err := svc.KeyUsed(ctx, alice.ID, pub); err != nil {
		t.Fatal(err)
	}
	list, err = svc.List(ctx, alice)
	if err != nil || len(list) != 1 || list[0].LastUsedAt == nil {
		t.Fatalf("list after use: %+v %v", list, err)
	}
	if err := svc.Delete(ctx, bob, k.Fingerprint); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("bob deletes alice's key: %v", err)
	}
	if err := svc.Delete(ctx, alice, k.Fingerprint); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AccountForKey(ctx, in.ID, pub); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("a deleted key still names an account: %v", err)
	}
	if _, err := svc.Add(ctx, nil, text, ""); !gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		t.Fatalf("signed out: %v", err)
	}
}

// TestSquattedKey: bob registers alice's public key first (public keys are
// public). Alice still adds it and her logins to her instances speak for
// her; bob's registration speaks only for bob's instances (where bob, who
// lacks the private key, cannot use it anyway); deleting his copy leaves
// hers. Both stores.
func TestSquattedKey(t *testing.T) {
	for name, open := range map[string]func(testing.TB) gpurent.Store{"sqlite": storetest.SQLite, "postgres": storetest.Postgres} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			svc := sshkeys.New(st, nil)
			alice := storetest.SeedAccount(t, st, "alice-sq@example.com")
			bob := storetest.SeedAccount(t, st, "bob-sq@example.com")
			edPub, _, _ := ed25519.GenerateKey(rand.Reader)
			text := authorized(t, edPub, "alice@laptop")
			squat, err := svc.Add(ctx, bob, text, "not mine")
			if err != nil {
				t.Fatalf("bob registers alice's key: %v", err)
			}
			mine, err := svc.Add(ctx, alice, text, "")
			if err != nil || mine.AccountID != alice.ID || mine.ID == squat.ID {
				t.Fatalf("alice adds her own key after bob: %+v %v", mine, err)
			}
			aliceIn := storetest.SeedInstance(t, st, alice.ID, "alice-sq-1")
			bobIn := storetest.SeedInstance(t, st, bob.ID, "bob-sq-1")
			pub, _ := ssh.NewPublicKey(edPub)
			for _, c := range []struct{ instance, want string }{
				{aliceIn.ID, alice.ID}, {bobIn.ID, bob.ID}, {"i-nonexistent", bob.ID}, // the oldest registration
			} {
				if got, err := svc.AccountForKey(ctx, c.instance, pub); err != nil || got != c.want {
					t.Errorf("login to %s: account %q %v, want %q", c.instance, got, err, c.want)
				}
			}
			if err := svc.Delete(ctx, bob, mine.Fingerprint); err != nil {
				t.Fatal(err)
			}
			if keys, err := svc.List(ctx, alice); err != nil || len(keys) != 1 || keys[0].ID != mine.ID {
				t.Fatalf("alice's keys after bob deleted his copy: %+v %v", keys, err)
			}
			if got, err := svc.AccountForKey(ctx, bobIn.ID, pub); err != nil || got != alice.ID {
				t.Errorf("bob's instance after his copy went: %q %v, want alice's (refused by the instance check)", got, err)
			}
		})
	}
}
