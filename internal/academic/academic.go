// Package academic runs academic verification: a customer applies with a
// university e-mail address or an uploaded proof, an operator approves or
// rejects, every step is audited, and an approved account gets academic
// prices until its verification ends.
package academic

import (
	"context"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpurent/gpurent"
)

// DefaultDomains are the e-mail domain suffixes accepted as university
// addresses by default: mainland China's edu.cn and ac.cn, and the common
// academic suffixes elsewhere. An operator replaces them with its own list.
func DefaultDomains() []string {
	return []string{"edu.cn", "ac.cn", "edu", "ac.uk", "edu.hk", "edu.tw", "ac.jp", "edu.au", "edu.sg"}
}

// Store is what the academic service reads and writes: the applications
// and their audit.
type Store interface {
	gpurent.AcademicStore
}

// Config configures the service.
type Config struct {
	Store  Store
	Now    func() time.Time
	Logger *slog.Logger
	// Domains are the accepted university e-mail domain suffixes
	// (default DefaultDomains).
	Domains []string
	// Validity is how long an approval lasts (default one year).
	Validity time.Duration
	// MaxProofBytes bounds an uploaded proof (default 512 KiB).
	MaxProofBytes int
	// Emails says whether the account proved its current address (the
	// auth service). An application by university e-mail is refused until
	// it has: an unproven address proves nothing. Nil: addresses are taken
	// as they are (tests of other things only).
	Emails EmailVerifier
}

// EmailVerifier says whether an account proved its current e-mail address
// (internal/auth).
type EmailVerifier interface {
	EmailVerified(ctx context.Context, acc *gpurent.Account) (bool, error)
}

// Service is the academic verification service.
type Service struct{ cfg Config }

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Domains == nil {
		cfg.Domains = DefaultDomains()
	}
	if cfg.Validity <= 0 {
		cfg.Validity = 365 * 24 * time.Hour
	}
	if cfg.MaxProofBytes <= 0 {
		cfg.MaxProofBytes = 512 << 10
	}
	return &Service{cfg: cfg}
}

// UniversityEmail reports whether email's domain ends in one of domains
// (at a label boundary: "x.edu.cn" matches "edu.cn", "xedu.cn" does not).
func UniversityEmail(email string, domains []string) bool {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return false
	}
	host := strings.ToLower(email[at+1:])
	for _, d := range domains {
		d = strings.ToLower(strings.TrimPrefix(d, "."))
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// Apply files an application for the account.
func (s *Service) Apply(ctx context.Context, acc *gpurent.Account, method gpurent.AcademicMethod, institution, proof string) (*gpurent.AcademicApplication, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	institution = strings.TrimSpace(institution)
	if institution == "" || utf8.RuneCountInString(institution) > 200 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "institution is required (at most 200 characters)")
	}
	now := s.cfg.Now()
	if acc.AcademicUntil != nil && acc.AcademicUntil.Sub(now) > 30*24*time.Hour {
		return nil, gpurent.Errorf(gpurent.CodeConflict, "the account is verified until %s; apply again in its last 30 days",
			acc.AcademicUntil.Format("2006-01-02"))
	}
	switch method {
	case gpurent.AcademicEmailDomain:
		if !UniversityEmail(acc.Email, s.cfg.Domains) {
			return nil, gpurent.Errorf(gpurent.CodeInvalid,
				"%s is not a university address this operator recognises (%s); apply with a proof instead",
				acc.Email, strings.Join(s.cfg.Domains, ", "))
		}
		if s.cfg.Emails != nil {
			ok, err := s.cfg.Emails.EmailVerified(ctx, acc)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, gpurent.Errorf(gpurent.CodeInvalid,
					"%s is not verified yet: confirm it with the link we mail you (account page, \"resend\"), then apply", acc.Email)
			}
		}
		proof = ""
	case gpurent.AcademicProof:
		if strings.TrimSpace(proof) == "" {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "proof is required: describe it, link it, or upload a small file")
		}
		if len(proof) > s.cfg.MaxProofBytes {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "proof is larger than %d bytes", s.cfg.MaxProofBytes)
		}
	default:
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "method must be email_domain or proof, got %q", method)
	}
	a := &gpurent.AcademicApplication{AccountID: acc.ID, Method: method, Institution: institution,
		Email: acc.Email, Proof: proof, CreatedAt: now}
	if err := s.cfg.Store.CreateAcademicApplication(ctx, a); err != nil {
		return nil, err
	}
	s.cfg.Logger.Info("academic application filed", "application", a.ID, "account", acc.ID, "method", method)
	return a, nil
}

// List returns the account's applications; an operator asking for all
// gets every account's, optionally only those in state.
func (s *Service) List(ctx context.Context, acc *gpurent.Account, all bool, state gpurent.AcademicState) ([]gpurent.AcademicApplication, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	f := gpurent.AcademicFilter{AccountID: acc.ID, State: state}
	if all {
		if acc.Role != gpurent.RoleOperator {
			return nil, gpurent.Errorf(gpurent.CodeForbidden, "only operators see every application")
		}
		f.AccountID = ""
	}
	switch state {
	case "", gpurent.AcademicPending, gpurent.AcademicApproved, gpurent.AcademicRejected:
	default:
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "state must be pending, approved or rejected")
	}
	return s.cfg.Store.ListAcademicApplications(ctx, f)
}

// Get returns an application with its audit trail, to its applicant or an
// operator; another account's is not found.
func (s *Service) Get(ctx context.Context, acc *gpurent.Account, id string) (*gpurent.AcademicApplication, []gpurent.AcademicAuditEntry, error) {
	if acc == nil {
		return nil, nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	a, err := s.cfg.Store.AcademicApplication(ctx, id)
	if err != nil || (a.AccountID != acc.ID && acc.Role != gpurent.RoleOperator) {
		if err == nil || gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, nil, gpurent.Errorf(gpurent.CodeNotFound, "academic application %q not found", id)
		}
		return nil, nil, err
	}
	audit, err := s.cfg.Store.AcademicAudit(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return a, audit, nil
}

// Decide approves (academic prices for Validity from now) or rejects (a
// reason is required) a pending application. Operators only.
func (s *Service) Decide(ctx context.Context, op *gpurent.Account, id string, approve bool, note string) (*gpurent.AcademicApplication, error) {
	if op == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	if op.Role != gpurent.RoleOperator {
		return nil, gpurent.Errorf(gpurent.CodeForbidden, "only operators decide academic applications")
	}
	note = strings.TrimSpace(note)
	if utf8.RuneCountInString(note) > 500 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "the note is at most 500 characters")
	}
	now := s.cfg.Now()
	state, until := gpurent.AcademicRejected, (*time.Time)(nil)
	if approve {
		u := now.Add(s.cfg.Validity)
		state, until = gpurent.AcademicApproved, &u
	} else if note == "" {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "a rejection needs a reason the customer can act on")
	}
	a, err := s.cfg.Store.DecideAcademicApplication(ctx, id, state, op.ID, note, now, until)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "academic application %q not found", id)
	}
	if err != nil {
		return nil, err
	}
	s.cfg.Logger.Info("academic application decided", "application", id, "state", state, "by", op.ID)
	return a, nil
}
