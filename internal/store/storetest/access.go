package storetest

import (
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

// testAccess: SSH keys are unique by fingerprint per account (one key may
// be on several accounts) and deleted only by their owner; a host's access address and host key read
// back; access sessions are recorded, ended and listed newest first.
func testAccess(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	alice := SeedAccount(t, s, "keys-a@example.com")
	bob := SeedAccount(t, s, "keys-b@example.com")
	k := &gpurent.SSHKey{AccountID: alice.ID, Name: "laptop", PublicKey: "ssh-ed25519 AAAAC3Nza alice@laptop", Fingerprint: "SHA256:abc"}
	must(t, s.AddSSHKey(ctx, k), "add key")
	wantCode(t, s.AddSSHKey(ctx, &gpurent.SSHKey{AccountID: alice.ID, Name: "again", PublicKey: k.PublicKey, Fingerprint: k.Fingerprint}),
		gpurent.CodeConflict, "the same key twice on one account")
	// Public keys are public: bob registering alice's key is no conflict,
	// and each account reads back its own registration.
	theirs := &gpurent.SSHKey{AccountID: bob.ID, Name: "squatted", PublicKey: k.PublicKey, Fingerprint: k.Fingerprint,
		CreatedAt: time.Now().Add(time.Minute)}
	must(t, s.AddSSHKey(ctx, theirs), "the same key on another account")
	for acc, want := range map[string]string{alice.ID: k.ID, bob.ID: theirs.ID} {
		got, err := s.SSHKeyOfAccount(ctx, acc, k.Fingerprint)
		if err != nil || got.ID != want || got.AccountID != acc {
			t.Fatalf("key of account %s: %+v %v, want %s", acc, got, err, want)
		}
	}
	_, err := s.SSHKeyOfAccount(ctx, SeedAccount(t, s, "keys-c@example.com").ID, k.Fingerprint)
	wantCode(t, err, gpurent.CodeNotFound, "the key of an account without it")
	must(t, s.DeleteSSHKey(ctx, bob.ID, theirs.ID), "bob deletes his copy")
	wantCode(t, s.AddSSHKey(ctx, &gpurent.SSHKey{AccountID: alice.ID, PublicKey: "x"}), gpurent.CodeInvalid, "no fingerprint")
	got, err := s.SSHKeyByFingerprint(ctx, "SHA256:abc")
	must(t, err, "by fingerprint")
	if got.ID != k.ID || got.AccountID != alice.ID || got.PublicKey != k.PublicKey || got.LastUsedAt != nil {
		t.Fatalf("key read back as %+v", got)
	}
	used := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	must(t, s.TouchSSHKey(ctx, k.ID, used), "touch")
	list, err := s.ListSSHKeys(ctx, alice.ID)
	must(t, err, "list")
	if len(list) != 1 || list[0].LastUsedAt == nil || !list[0].LastUsedAt.Equal(used) {
		t.Fatalf("alice's keys: %+v", list)
	}
	wantCode(t, s.DeleteSSHKey(ctx, bob.ID, k.ID), gpurent.CodeNotFound, "bob deletes alice's key")
	must(t, s.DeleteSSHKey(ctx, alice.ID, k.ID), "delete")
	_, err = s.SSHKeyByFingerprint(ctx, "SHA256:abc")
	wantCode(t, err, gpurent.CodeNotFound, "a deleted key")

	h := SeedHost(t, s, "access-node", "h100-80g-sxm", 1)
	must(t, s.SetHostAccess(ctx, h.ID, "10.0.0.5:2223", "ssh-ed25519 AAAAhost"), "set host access")
	hr, err := s.HostByID(ctx, h.ID)
	must(t, err, "read host")
	if hr.AccessAddr != "10.0.0.5:2223" || hr.AccessHostKey != "ssh-ed25519 AAAAhost" {
		t.Fatalf("host access read back as %q %q", hr.AccessAddr, hr.AccessHostKey)
	}
	wantCode(t, s.SetHostAccess(ctx, "host-nope", "x", "y"), gpurent.CodeNotFound, "access of a missing host")

	first := &gpurent.AccessSession{AccountID: alice.ID, InstanceID: "i-1", Kind: "exec", Detail: "nvidia-smi", ClientAddr: "127.0.0.1:5000",
		StartedAt: used}
	must(t, s.AddAccessSession(ctx, first), "add session")
	end, status := used.Add(time.Minute), 3
	first.EndedAt, first.ExitStatus, first.BytesIn, first.BytesOut = &end, &status, 10, 2000
	must(t, s.EndAccessSession(ctx, first), "end session")
	refused := &gpurent.AccessSession{InstanceID: "i-1", Kind: "refused", Detail: "unknown key", ClientAddr: "127.0.0.1:5001",
		StartedAt: used.Add(time.Hour)}
	must(t, s.AddAccessSession(ctx, refused), "add refusal")
	mine, err := s.ListAccessSessions(ctx, alice.ID, 10)
	must(t, err, "list sessions")
	if len(mine) != 1 || mine[0].ExitStatus == nil || *mine[0].ExitStatus != 3 || mine[0].BytesOut != 2000 || mine[0].EndedAt == nil {
		t.Fatalf("alice's sessions: %+v", mine)
	}
	all, err := s.ListAccessSessions(ctx, "", 10)
	must(t, err, "list all sessions")
	if len(all) != 2 || all[0].ID != refused.ID || all[0].ExitStatus != nil {
		t.Fatalf("all sessions, newest first: %+v", all)
	}
}
