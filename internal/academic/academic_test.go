package academic_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/academic"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

func TestUniversityEmail(t *testing.T) {
	for email, want := range map[string]bool{
		"li@uestc.edu.cn":      true,
		"li@std.uestc.edu.cn":  true,
		"wang@ict.ac.cn":       true,
		"bob@mit.edu":          true,
		"x@EDU.CN":             true,
		"li@xedu.cn":           false,
		"li@edu.cn.evil.com":   false,
		"li@gmail.com":         false,
		"no-at-sign.edu.cn":    false,
		"li@uestc.edu.cn.":     false,
		"li@example.edu.co.uk": false,
	} {
		if got := academic.UniversityEmail(email, academic.DefaultDomains()); got != want {
			t.Errorf("%s: %v, want %v", email, got, want)
		}
	}
}

type fixture struct {
	svc        *academic.Service
	st         gpurent.Store
	now        time.Time
	student    *gpurent.Account
	outsider   *gpurent.Account
	op         *gpurent.Account
	customerOp *gpurent.Account
}

func newFixture(t *testing.T) *fixture {
	st := storetest.SQLite(t)
	f := &fixture{st: st, now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	f.svc = academic.New(academic.Config{Store: st, Now: func() time.Time { return f.now }})
	f.student = storetest.SeedAccount(t, st, "li@std.uestc.edu.cn")
	f.outsider = storetest.SeedAccount(t, st, "bob@example.com")
	f.customerOp = storetest.SeedAccount(t, st, "eve@example.com")
	f.op = &gpurent.Account{Email: "ops@example.com", Name: "ops", Role: gpurent.RoleOperator, PasswordHash: "x"}
	if err := st.CreateAccount(context.Background(), f.op); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestApplyApprove(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for name, c := range map[string]struct {
		acc         *gpurent.Account
		method      gpurent.AcademicMethod
		inst, proof string
		code        gpurent.Code
	}{
		"signed out":         {nil, gpurent.AcademicEmailDomain, "UESTC", "", gpurent.CodeUnauthorized},
		"no institution":     {f.student, gpurent.AcademicEmailDomain, " ", "", gpurent.CodeInvalid},
		"not a university":   {f.outsider, gpurent.AcademicEmailDomain, "Example Inc", "", gpurent.CodeInvalid},
		"proof missing":      {f.outsider, gpurent.AcademicProof, "SCU", "  ", gpurent.CodeInvalid},
		"proof too large":    {f.outsider, gpurent.AcademicProof, "SCU", strings.Repeat("x", 600<<10), gpurent.CodeInvalid},
		"unknown method":     {f.outsider, "rumour", "SCU", "", gpurent.CodeInvalid},
		"institution length": {f.student, gpurent.AcademicEmailDomain, strings.Repeat("大", 201), "", gpurent.CodeInvalid},
	} {
		if _, err := f.svc.Apply(ctx, c.acc, c.method, c.inst, c.proof); !gpurent.IsCode(err, c.code) {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
	if list, _ := f.st.ListAcademicApplications(ctx, gpurent.AcademicFilter{}); len(list) != 0 {
		t.Fatalf("refused applications left records: %+v", list)
	}
	a, err := f.svc.Apply(ctx, f.student, gpurent.AcademicEmailDomain, "UESTC", "ignored")
	if err != nil {
		t.Fatal(err)
	}
	if a.Proof != "" || a.Email != f.student.Email || a.State != gpurent.AcademicPending {
		t.Errorf("filed: %+v", a)
	}
	if _, err := f.svc.Apply(ctx, f.student, gpurent.AcademicEmailDomain, "UESTC", ""); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("second pending: %v", err)
	}
	// Who sees what.
	if _, _, err := f.svc.Get(ctx, f.outsider, a.ID); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("another customer reads it: %v", err)
	}
	if _, err := f.svc.List(ctx, f.outsider, true, ""); !gpurent.IsCode(err, gpurent.CodeForbidden) {
		t.Errorf("a customer lists all: %v", err)
	}
	if list, err := f.svc.List(ctx, f.op, true, gpurent.AcademicPending); err != nil || len(list) != 1 {
		t.Errorf("operator's pending list: %+v %v", list, err)
	}
	if _, err := f.svc.List(ctx, f.op, true, "lost"); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("bad state filter: %v", err)
	}
	// Deciding.
	if _, err := f.svc.Decide(ctx, f.customerOp, a.ID, true, ""); !gpurent.IsCode(err, gpurent.CodeForbidden) {
		t.Errorf("a customer approves: %v", err)
	}
	if _, err := f.svc.Decide(ctx, f.op, a.ID, false, ""); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("a rejection without a reason: %v", err)
	}
	if _, err := f.svc.Decide(ctx, f.op, "acad-nope", true, ""); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("unknown application: %v", err)
	}
	got, err := f.svc.Decide(ctx, f.op, a.ID, true, "domain on the list")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != gpurent.AcademicApproved || got.VerifiedUntil == nil || !got.VerifiedUntil.Equal(f.now.Add(365*24*time.Hour)) {
		t.Errorf("approved: %+v", got)
	}
	acc, err := f.st.AccountByID(ctx, f.student.ID)
	if err != nil || !acc.Academic(f.now) || acc.Academic(f.now.Add(366*24*time.Hour)) {
		t.Fatalf("account after approval: %+v %v", acc, err)
	}
	_, audit, err := f.svc.Get(ctx, f.student, a.ID)
	if err != nil || len(audit) != 2 || audit[1].Actor != f.op.ID || audit[1].Note != "domain on the list" {
		t.Errorf("audit: %+v %v", audit, err)
	}
	// Verified for a year: no new application until its last 30 days.
	if _, err := f.svc.Apply(ctx, acc, gpurent.AcademicEmailDomain, "UESTC", ""); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("re-applying while verified: %v", err)
	}
	f.now = f.now.Add(340 * 24 * time.Hour)
	if _, err := f.svc.Apply(ctx, acc, gpurent.AcademicEmailDomain, "UESTC", ""); err != nil {
		t.Errorf("renewing in the last 30 days: %v", err)
	}
	// A proof application, rejected with a reason the customer sees.
	p, err := f.svc.Apply(ctx, f.outsider, gpurent.AcademicProof, "SCU", "data:image/png;base64,iVBORw0KGgo=")
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.svc.Decide(ctx, f.op, p.ID, false, "the card has expired")
	if err != nil || r.State != gpurent.AcademicRejected || r.Reason != "the card has expired" {
		t.Fatalf("rejected: %+v %v", r, err)
	}
	if o, _ := f.st.AccountByID(ctx, f.outsider.ID); o.AcademicUntil != nil {
		t.Errorf("rejection made the account academic")
	}
}

// TestUniversityEmailMustBeVerified: an application by university e-mail
// from an address the account never proved is refused (on both stores);
// once the auth service verified it, the same application is filed, and
// a proof-based application never needed it.
func TestUniversityEmailMustBeVerified(t *testing.T) {
	for name, open := range map[string]func(testing.TB) gpurent.Store{"sqlite": storetest.SQLite, "postgres": storetest.Postgres} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			au := auth.New(auth.Config{Store: st})
			svc := academic.New(academic.Config{Store: st, Emails: au})
			student := storetest.SeedAccount(t, st, "zhang@std.uestc.edu.cn")
			_, err := svc.Apply(ctx, student, gpurent.AcademicEmailDomain, "UESTC", "")
			if !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), "not verified") {
				t.Fatalf("unverified university address: %v, want refused", err)
			}
			if _, err := svc.Apply(ctx, student, gpurent.AcademicProof, "UESTC", "student card"); err != nil {
				t.Fatalf("a proof needs no verified address: %v", err)
			}
			other := storetest.SeedAccount(t, st, "wu@std.uestc.edu.cn")
			secret, err := au.RequestEmailVerification(ctx, other)
			if err != nil {
				t.Fatal(err)
			}
			if err := au.ConfirmEmail(ctx, other, secret); err != nil {
				t.Fatal(err)
			}
			a, err := svc.Apply(ctx, other, gpurent.AcademicEmailDomain, "UESTC", "")
			if err != nil || a.Email != other.Email {
				t.Fatalf("verified university address: %+v %v", a, err)
			}
		})
	}
}
