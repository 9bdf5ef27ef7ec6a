package storetest

import (
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

// testIdleRunFlags: a GPU flagged twice keeps its first flag; flags list by
// host; clearing removes only flags set at or before the time given.
func testIdleRunFlags(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "flagged", "h100-80g-sxm", 2)
	other := SeedHost(t, s, "flagged-2", "h100-80g-sxm", 1)
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	must(t, s.FlagIdleRun(ctx, &gpurent.IdleRunFlag{GPUID: h.GPUs[0].ID, HostID: h.ID, JobID: "bj-1", Reason: "slow", FlaggedAt: t0}), "flag")
	must(t, s.FlagIdleRun(ctx, &gpurent.IdleRunFlag{GPUID: h.GPUs[0].ID, HostID: h.ID, JobID: "bj-2", Reason: "again", FlaggedAt: t0.Add(time.Hour)}), "flag again")
	must(t, s.FlagIdleRun(ctx, &gpurent.IdleRunFlag{GPUID: h.GPUs[1].ID, HostID: h.ID, JobID: "bj-3", FlaggedAt: t0.Add(2 * time.Hour)}), "flag 2")
	must(t, s.FlagIdleRun(ctx, &gpurent.IdleRunFlag{GPUID: other.GPUs[0].ID, HostID: other.ID, JobID: "bj-4", FlaggedAt: t0}), "flag other")
	wantCode(t, s.FlagIdleRun(ctx, &gpurent.IdleRunFlag{GPUID: h.GPUs[0].ID}), gpurent.CodeInvalid, "a flag without host and job")
	list, err := s.ListIdleRunFlags(ctx, h.ID)
	must(t, err, "list")
	if len(list) != 2 || list[0].GPUID != h.GPUs[0].ID || list[0].JobID != "bj-1" || !list[0].FlaggedAt.Equal(t0) || list[1].GPUID != h.GPUs[1].ID {
		t.Fatalf("host's flags: %+v", list)
	}
	if all, err := s.ListIdleRunFlags(ctx, ""); err != nil || len(all) != 3 {
		t.Fatalf("all flags: %+v %v", all, err)
	}
	// A run begun at t0+1h answers the first flag, not the later one.
	must(t, s.ClearIdleRunFlags(ctx, []string{h.GPUs[0].ID, h.GPUs[1].ID}, t0.Add(time.Hour)), "clear")
	list, err = s.ListIdleRunFlags(ctx, h.ID)
	must(t, err, "list after clear")
	if len(list) != 1 || list[0].GPUID != h.GPUs[1].ID {
		t.Fatalf("flags after clear: %+v", list)
	}
	must(t, s.ClearIdleRunFlags(ctx, nil, t0), "clear nothing")
}

// testEmailVerifications: an address is verified per account and address;
// recording it again keeps the first time; an unknown account is
// not_found.
func testEmailVerifications(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "verify@example.com")
	if at, err := s.EmailVerifiedAt(ctx, acc.ID, acc.Email); err != nil || at != nil {
		t.Fatalf("before: %v %v", at, err)
	}
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	must(t, s.SetEmailVerified(ctx, acc.ID, acc.Email, t0), "verify")
	must(t, s.SetEmailVerified(ctx, acc.ID, acc.Email, t0.Add(time.Hour)), "verify again")
	if at, err := s.EmailVerifiedAt(ctx, acc.ID, acc.Email); err != nil || at == nil || !at.Equal(t0) {
		t.Fatalf("after: %v %v", at, err)
	}
	if at, err := s.EmailVerifiedAt(ctx, acc.ID, "other@example.com"); err != nil || at != nil {
		t.Fatalf("another address: %v %v", at, err)
	}
	wantCode(t, s.SetEmailVerified(ctx, "acc-none", "x@example.com", t0), gpurent.CodeNotFound, "an unknown account")
}
