package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

func testAcademic(t *testing.T, s gpurent.Store) {
	ctx := context.Background()
	acc := SeedAccount(t, s, "student@uestc.edu.cn")
	other := SeedAccount(t, s, "someone@example.com")
	op := SeedAccount(t, s, "ops@example.com")
	if acc.AcademicUntil != nil || acc.Academic(time.Now()) {
		t.Fatalf("a new account is not academic: %+v", acc)
	}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	a := &gpurent.AcademicApplication{AccountID: acc.ID, Method: gpurent.AcademicEmailDomain,
		Institution: "UESTC", Email: acc.Email, CreatedAt: at}
	if err := s.CreateAcademicApplication(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.ID == "" || a.State != gpurent.AcademicPending {
		t.Fatalf("created: %+v", a)
	}
	again := &gpurent.AcademicApplication{AccountID: acc.ID, Method: gpurent.AcademicProof, Institution: "UESTC", Proof: "card"}
	if err := s.CreateAcademicApplication(ctx, again); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("second pending application: %v, want conflict", err)
	}
	for _, bad := range []*gpurent.AcademicApplication{{Method: gpurent.AcademicProof}, {AccountID: acc.ID, Method: "gossip"}} {
		if err := s.CreateAcademicApplication(ctx, bad); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%+v: %v, want invalid", bad, err)
		}
	}
	b := &gpurent.AcademicApplication{AccountID: other.ID, Method: gpurent.AcademicProof, Institution: "SCU", Proof: "data:image/png;base64,AAAA"}
	if err := s.CreateAcademicApplication(ctx, b); err != nil {
		t.Fatal(err)
	}
	if list, err := s.ListAcademicApplications(ctx, gpurent.AcademicFilter{State: gpurent.AcademicPending}); err != nil || len(list) != 2 {
		t.Fatalf("pending: %v %v", list, err)
	}
	if list, err := s.ListAcademicApplications(ctx, gpurent.AcademicFilter{AccountID: other.ID}); err != nil || len(list) != 1 || list[0].Proof != b.Proof {
		t.Fatalf("by account: %+v %v", list, err)
	}

	until := at.AddDate(1, 0, 0)
	if _, err := s.DecideAcademicApplication(ctx, a.ID, gpurent.AcademicApproved, op.ID, "", at, nil); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("approval without an end: %v", err)
	}
	got, err := s.DecideAcademicApplication(ctx, a.ID, gpurent.AcademicApproved, op.ID, "domain checked", at.Add(time.Hour), &until)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != gpurent.AcademicApproved || got.DecidedBy != op.ID || got.DecidedAt == nil ||
		!got.DecidedAt.Equal(at.Add(time.Hour)) || got.VerifiedUntil == nil || !got.VerifiedUntil.Equal(until) {
		t.Errorf("approved: %+v", got)
	}
	if _, err := s.DecideAcademicApplication(ctx, a.ID, gpurent.AcademicRejected, op.ID, "changed my mind", at, nil); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("deciding twice: %v, want conflict", err)
	}
	reread, err := s.AccountByID(ctx, acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if reread.AcademicUntil == nil || !reread.AcademicUntil.Equal(until) || !reread.Academic(until.Add(-time.Second)) || reread.Academic(until) {
		t.Errorf("account after approval: %+v", reread)
	}
	if _, err := s.DecideAcademicApplication(ctx, b.ID, gpurent.AcademicRejected, op.ID, "unreadable", at, &until); err != nil {
		t.Fatal(err)
	}
	if o, _ := s.AccountByID(ctx, other.ID); o.AcademicUntil != nil {
		t.Errorf("a rejection gave academic status: %+v", o)
	}
	// A rejected applicant may apply again.
	if err := s.CreateAcademicApplication(ctx, &gpurent.AcademicApplication{AccountID: other.ID, Method: gpurent.AcademicProof, Institution: "SCU", Proof: "letter"}); err != nil {
		t.Errorf("applying again after a rejection: %v", err)
	}
	audit, err := s.AcademicAudit(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 2 || audit[0].Action != "applied" || audit[0].Actor != acc.ID ||
		audit[1].Action != "approved" || audit[1].Actor != op.ID || audit[1].Note != "domain checked" {
		t.Errorf("audit: %+v", audit)
	}
	if _, err := s.AcademicApplication(ctx, "acad-none"); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("unknown application: %v", err)
	}
	if _, err := s.DecideAcademicApplication(ctx, "acad-none", gpurent.AcademicRejected, op.ID, "", at, nil); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("deciding an unknown application: %v", err)
	}
}
