package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

// seedJoinToken stores a join token for zone z1 that expires at exp.
func seedJoinToken(t *testing.T, s gpurent.Queries, hash, name, hostID string, exp time.Time) *gpurent.JoinToken {
	t.Helper()
	jt := &gpurent.JoinToken{Hash: hash, ZoneID: "z1", Name: name, HostID: hostID, CreatedBy: "acc-op",
		CreatedAt: exp.Add(-24 * time.Hour), ExpiresAt: exp}
	must(t, s.CreateJoinToken(t.Context(), jt), "create join token "+hash)
	return jt
}

func seedZ1(t *testing.T, s gpurent.Queries) {
	t.Helper()
	must(t, s.UpsertZone(t.Context(), gpurent.Zone{ID: "z1", Name: "Zone one", Region: "r"}), "zone z1")
}

// testJoinTokens: a token is used once, an expired or revoked one never,
// and the list shows each one's state without its secret changing.
func testJoinTokens(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	seedZ1(t, s)
	now := jtNow
	a := seedJoinToken(t, s, "hash-a", "", "", now.Add(time.Hour))
	b := seedJoinToken(t, s, "hash-b", "node-b", "", now.Add(-time.Second)) // expired
	c := seedJoinToken(t, s, "hash-c", "", "", now.Add(time.Hour))
	wantCode(t, s.CreateJoinToken(ctx, &gpurent.JoinToken{Hash: "hash-a", ZoneID: "z1", ExpiresAt: now}),
		gpurent.CodeConflict, "same hash twice")
	wantCode(t, s.CreateJoinToken(ctx, &gpurent.JoinToken{Hash: "hash-x", ZoneID: "z1"}),
		gpurent.CodeInvalid, "no expiry")

	got, err := s.UseJoinToken(ctx, "hash-a", "node-a", now)
	must(t, err, "use a")
	if got.ID != a.ID || got.UsedAt == nil || !got.UsedAt.Equal(now) || got.UsedName != "node-a" {
		t.Fatalf("used token %+v, want %s used at %v by node-a", got, a.ID, now)
	}
	_, err = s.UseJoinToken(ctx, "hash-a", "node-z", now)
	wantCode(t, err, gpurent.CodeConflict, "use a again")
	_, err = s.UseJoinToken(ctx, "hash-b", "node-b", now)
	wantCode(t, err, gpurent.CodeConflict, "use expired b")
	_, err = s.UseJoinToken(ctx, "hash-nope", "node-b", now)
	wantCode(t, err, gpurent.CodeNotFound, "use unknown")
	_, err = s.UseJoinToken(ctx, "", "node-b", now)
	wantCode(t, err, gpurent.CodeNotFound, "use empty")

	must(t, s.RevokeJoinToken(ctx, c.ID, now), "revoke c")
	_, err = s.UseJoinToken(ctx, "hash-c", "node-c", now)
	wantCode(t, err, gpurent.CodeConflict, "use revoked c")
	wantCode(t, s.RevokeJoinToken(ctx, a.ID, now), gpurent.CodeConflict, "revoke used a")
	wantCode(t, s.RevokeJoinToken(ctx, "jt-nope", now), gpurent.CodeNotFound, "revoke unknown")

	list, err := s.ListJoinTokens(ctx)
	must(t, err, "list")
	states := map[string]string{}
	for i := range list {
		states[list[i].ID] = list[i].State(now)
	}
	same(t, "states", states, map[string]string{a.ID: "used", b.ID: "expired", c.ID: "revoked"})
	if len(list) != 3 {
		t.Fatalf("list %+v, want 3 tokens", list)
	}
}

// testJoinTokenRace: many registrations racing with one token; the
// database lets exactly one through.
func testJoinTokenRace(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	seedZ1(t, s)
	now := jtNow
	seedJoinToken(t, s, "hash-race", "", "", now.Add(time.Hour))
	const n = 20
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = s.InTx(ctx, func(q gpurent.Queries) error {
				if _, err := q.UseJoinToken(ctx, "hash-race", "node", now); err != nil {
					return err
				}
				return q.TouchHost(ctx, "host-none", now) // not found: the use rolls back
			})
		})
	}
	close(start)
	wg.Wait()
	// Every transaction failed after its use (the host is unknown), so
	// each use was rolled back: none may have stuck.
	for i, err := range errs {
		if gpurent.ErrorCode(err) != gpurent.CodeNotFound && gpurent.ErrorCode(err) != gpurent.CodeConflict {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	if _, err := s.UseJoinToken(ctx, "hash-race", "node", now); err != nil {
		t.Fatalf("a rolled-back use stuck: %v", err)
	}

	seedJoinToken(t, s, "hash-race2", "", "", now.Add(time.Hour))
	start = make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = s.UseJoinToken(ctx, "hash-race2", "node", now)
		})
	}
	close(start)
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch gpurent.ErrorCode(err) {
		case "":
			wins++
		case gpurent.CodeConflict:
		default:
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d uses of one token won, want exactly 1", wins)
	}
}

// testCreateHostNeverUpdates: CreateHost refuses a taken name and leaves
// the existing host as it was.
func testCreateHostNeverUpdates(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "node-1", "h100-80g-sxm", 1)
	other := &gpurent.Host{Name: "node-1", ZoneID: "z2", CPUMilli: 1, MemoryMiB: 1, Runtime: "docker", AgentTokenHash: "hash-evil"}
	wantCode(t, s.CreateHost(ctx, other), gpurent.CodeConflict, "create taken name")
	got, err := s.HostByID(ctx, h.ID)
	must(t, err, "host")
	if got.AgentTokenHash != "hash-node-1" || got.ZoneID != "z1" || got.CPUMilli != h.CPUMilli {
		t.Fatalf("host changed by a refused create: %+v", got)
	}
	nh := &gpurent.Host{Name: "node-2", ZoneID: "z1", CPUMilli: 1, MemoryMiB: 1, Runtime: "docker", AgentTokenHash: "hash-2"}
	must(t, s.CreateHost(ctx, nh), "create new")
	if nh.ID == "" || nh.State != gpurent.HostReady || nh.RegisteredAt.IsZero() {
		t.Fatalf("created %+v", nh)
	}
}

// testGPUNeverMovesFromLiveHost: a host cannot take a GPU UUID another
// credentialed host holds (nothing written); after that host's reset it
// can.
func testGPUNeverMovesFromLiveHost(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	seedZ1(t, s)
	a := SeedHost(t, s, "node-a", "h100-80g-sxm", 2)
	b := SeedHost(t, s, "node-b", "h100-80g-sxm", 1)
	steal := []gpurent.GPU{b.GPUs[0], a.GPUs[1]}
	steal[1].HostID = ""
	wantCode(t, s.SyncHostGPUs(ctx, b.ID, steal), gpurent.CodeConflict, "claim a's GPU")
	gotA, err := s.HostByID(ctx, a.ID)
	must(t, err, "host a")
	same(t, "a's GPUs after b's claim", gotA.GPUs, a.GPUs)
	gotB, err := s.HostByID(ctx, b.ID)
	must(t, err, "host b")
	same(t, "b's GPUs after its refused claim", gotB.GPUs, b.GPUs)

	// Reset a: its credential is gone and its GPUs may move.
	seedJoinToken(t, s, "hash-for-a", "node-a", a.ID, jtNow.Add(time.Hour))
	must(t, s.ResetHostCredential(ctx, a.ID, jtNow), "reset a")
	gotA, err = s.HostByID(ctx, a.ID)
	must(t, err, "host a")
	if gotA.AgentTokenHash != "" || gotA.LastSeenAt != nil {
		t.Fatalf("reset host keeps credential %q / last seen %v", gotA.AgentTokenHash, gotA.LastSeenAt)
	}
	if _, err := s.HostByAgentTokenHash(ctx, "hash-node-a"); gpurent.ErrorCode(err) != gpurent.CodeNotFound {
		t.Fatalf("old agent token still authenticates: %v", err)
	}
	list, err := s.ListJoinTokens(ctx)
	must(t, err, "list")
	if len(list) != 1 || list[0].State(jtNow) != "revoked" {
		t.Fatalf("the reset host's earlier join token: %+v, want revoked", list)
	}
	must(t, s.SyncHostGPUs(ctx, b.ID, steal), "claim the reset host's GPU")
	gotB, err = s.HostByID(ctx, b.ID)
	must(t, err, "host b")
	if len(gotB.GPUs) != 2 {
		t.Fatalf("b's GPUs %+v, want 2", gotB.GPUs)
	}
	wantCode(t, s.ResetHostCredential(ctx, "host-nope", jtNow), gpurent.CodeNotFound, "reset unknown host")
}

// jtNow is the instant the join-token tests run at.
var jtNow = time.Date(2026, 3, 1, 8, 30, 0, 123456000, time.UTC)
