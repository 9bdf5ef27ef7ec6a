package operator

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/wallet"
)

// This file serves the operator's pages about people: academic
// applications (/ops/academic) and customer accounts (/ops/accounts) with
// operator credits and bank-transfer confirmations.

// Bounds of the people pages.
const (
	opsMaxDecided     = 100 // decided applications listed
	opsMaxAccounts    = 100 // accounts listed per search
	opsMaxNoteRunes   = 500
	opsMaxPaymentRef  = 255
	opsMaxSearchRunes = 200
)

// opsAcademicData is the academic applications page.
type opsAcademicData struct {
	Tabs             []opsTab
	Pending, Decided []opsAppRow
	// ErrorID is the application whose form failed; Note what was typed.
	ErrorID, Note string
}

type opsAppRow struct {
	ID, AccountID, Email, Institution string
	Method, MethodLabel               string
	Proof                             string
	ProofURL                          string // a link the customer gave
	ProofFile                         bool   // a small uploaded file (data: URL), not shown
	ProofBytes                        int
	State, StateLabel, Class          string
	Created                           time.Time
	Decided, Until                    *time.Time
	Reason                            string
}

// opsAppRowOf is an academic application as operators see it.
func opsAppRowOf(p *web.Page, a *gpurent.AcademicApplication) opsAppRow {
	row := opsAppRow{ID: a.ID, AccountID: a.AccountID, Email: a.Email, Institution: a.Institution,
		Method: string(a.Method), MethodLabel: opsLabel(p, "method", string(a.Method)), State: string(a.State),
		StateLabel: opsLabel(p, "app", string(a.State)), Class: opsBadge(string(a.State)),
		Created: a.CreatedAt, Decided: a.DecidedAt, Until: a.VerifiedUntil, Reason: a.Reason}
	switch proof := strings.TrimSpace(a.Proof); {
	case strings.HasPrefix(proof, "data:"):
		row.ProofFile, row.ProofBytes = true, len(proof)
	case strings.HasPrefix(proof, "https://") || strings.HasPrefix(proof, "http://"):
		row.ProofURL = proof
	default:
		row.Proof = proof
	}
	return row
}

func (s *Pages) opsAcademic(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.academic.title")
	d, err := s.opsAcademicData(p)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	s.site.Render(w, r, p, "ops_academic", d)
}

func (s *Pages) opsAcademicData(p *web.Page) (opsAcademicData, error) {
	ctx, acc := p.Context(), p.Account
	d := opsAcademicData{Tabs: s.opsTabs(p, "academic")}
	pending, err := s.cfg.Academic.List(ctx, acc, true, gpurent.AcademicPending)
	if err != nil {
		return d, err
	}
	sort.SliceStable(pending, func(i, j int) bool { return pending[i].CreatedAt.Before(pending[j].CreatedAt) })
	for i := range pending {
		d.Pending = append(d.Pending, opsAppRowOf(p, &pending[i]))
	}
	var decided []gpurent.AcademicApplication
	for _, st := range []gpurent.AcademicState{gpurent.AcademicApproved, gpurent.AcademicRejected} {
		list, err := s.cfg.Academic.List(ctx, acc, true, st)
		if err != nil {
			return d, err
		}
		decided = append(decided, list...)
	}
	at := func(a *gpurent.AcademicApplication) time.Time {
		if a.DecidedAt != nil {
			return *a.DecidedAt
		}
		return a.CreatedAt
	}
	sort.SliceStable(decided, func(i, j int) bool { return at(&decided[i]).After(at(&decided[j])) })
	for i := range decided {
		if i == opsMaxDecided {
			break
		}
		d.Decided = append(d.Decided, opsAppRowOf(p, &decided[i]))
	}
	return d, nil
}

// opsDecideAcademic approves or rejects an application, as the API's
// approve and reject routes do; a rejection needs a note.
func (s *Pages) opsDecideAcademic(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.academic.title")
	id, decision := r.PathValue("id"), r.PathValue("decision")
	if decision != "approve" && decision != "reject" {
		s.site.NotFound(w, r, p)
		return
	}
	again := func(msg string) {
		p.Error = msg
		d, err := s.opsAcademicData(p)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		d.ErrorID, d.Note = id, r.PostFormValue("note")
		s.site.RenderStatus(w, r, p, http.StatusBadRequest, "ops_academic", d)
	}
	note, problem := opsOneLine(r.PostFormValue("note"), opsMaxNoteRunes, decision == "reject")
	if problem == opsProblemRequired {
		again(p.T("ops.academic.reason_required"))
		return
	}
	if problem != "" {
		again(opsFieldError(p, problem, "ops.academic.note"))
		return
	}
	_, err := s.cfg.Academic.Decide(p.Context(), p.Account, id, decision == "approve", note)
	if s.opsRefused(w, r, p, err, again) {
		return
	}
	opsDone(w, r, "/ops/academic", nil, "academic_"+decision, "")
}

// opsAccountsData is the customer accounts page.
type opsAccountsData struct {
	Tabs     []opsTab
	Query    string
	Accounts []opsAccountRow
	// More is how many matched beyond those listed.
	More     int
	Credit   opsCreditForm
	Transfer opsTransferForm
}

type opsAccountRow struct {
	ID, Email, Name                  string
	Created                          time.Time
	SpendableFen, CashFen, CreditFen int64
	ArrearsFen                       int64
	Academic, AcademicLabel, Class   string
	AcademicUntil                    *time.Time
}

type opsCreditForm struct {
	Account, Amount, Reason, Key string
}

type opsTransferForm struct {
	Provider, Reference, Amount string
}

func (s *Pages) opsAccounts(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.accounts.title")
	q := r.URL.Query()
	credit := opsCreditForm{Account: q.Get("credit"), Key: gpurent.NewID("ccr")}
	d, err := s.opsAccountsData(p, q.Get("q"), credit, opsTransferForm{Provider: wallet.BankTransferName})
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	s.site.Render(w, r, p, "ops_accounts", d)
}

// opsAccountsData lists the customer accounts matching query (e-mail,
// name or id, case-insensitive), each with its wallet from the wallet
// service and its academic standing.
func (s *Pages) opsAccountsData(p *web.Page, query string, credit opsCreditForm, transfer opsTransferForm) (opsAccountsData, error) {
	ctx := p.Context()
	query, _ = opsOneLine(query, opsMaxSearchRunes, false)
	d := opsAccountsData{Tabs: s.opsTabs(p, "accounts"), Query: query, Credit: credit, Transfer: transfer}
	all, err := s.cfg.Auth.Accounts(ctx, p.Account)
	if err != nil {
		return d, err
	}
	pending := map[string]bool{}
	if s.cfg.Academic != nil {
		apps, err := s.cfg.Academic.List(ctx, p.Account, true, gpurent.AcademicPending)
		if err != nil {
			return d, err
		}
		for _, a := range apps {
			pending[a.AccountID] = true
		}
	}
	matched := opsMatchAccounts(all, query)
	now := s.opsNow()
	for i := range matched {
		if i == opsMaxAccounts {
			d.More = len(matched) - opsMaxAccounts
			break
		}
		a := &matched[i]
		row := opsAccountRow{ID: a.ID, Email: a.Email, Name: a.Name, Created: a.CreatedAt, Academic: "none"}
		switch {
		case a.Academic(now):
			row.Academic, row.AcademicUntil = "verified", a.AcademicUntil
		case pending[a.ID]:
			row.Academic = "pending"
		}
		row.AcademicLabel = p.T("ops.accounts.academic_" + row.Academic)
		row.Class = map[string]string{"verified": "ok", "pending": "warn"}[row.Academic]
		view, err := s.cfg.Wallet.Wallet(ctx, a)
		if err != nil {
			return d, err
		}
		row.SpendableFen, row.CashFen, row.CreditFen, row.ArrearsFen = view.SpendableFen, view.CashFen, view.CreditFen, view.ArrearsFen
		d.Accounts = append(d.Accounts, row)
	}
	return d, nil
}

// opsMatchAccounts are the customer accounts whose e-mail, name or id
// contains query (case-insensitive), newest first.
func opsMatchAccounts(all []gpurent.Account, query string) []gpurent.Account {
	q := strings.ToLower(strings.TrimSpace(query))
	var out []gpurent.Account
	for _, a := range all {
		if a.Role == gpurent.RoleOperator {
			continue
		}
		if q == "" || strings.Contains(strings.ToLower(a.Email), q) || strings.Contains(strings.ToLower(a.Name), q) ||
			strings.Contains(strings.ToLower(a.ID), q) {
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out
}

// opsCredit is an operator's credit (top-up) of a customer, as POST
// /api/v1/accounts/{id}/credit: the form's one-time key makes a double
// submit credit once.
func (s *Pages) opsCredit(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.accounts.title")
	f := opsCreditForm{Account: strings.TrimSpace(r.PostFormValue("account")), Amount: r.PostFormValue("amount"),
		Reason: r.PostFormValue("reason"), Key: r.PostFormValue("key")}
	query := r.PostFormValue("q")
	again := func(msg string) {
		p.Error = msg
		d, err := s.opsAccountsData(p, query, f, opsTransferForm{Provider: wallet.BankTransferName})
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		s.site.RenderStatus(w, r, p, http.StatusBadRequest, "ops_accounts", d)
	}
	if f.Key == "" || len(f.Key) > 64 {
		f.Key = gpurent.NewID("ccr")
	}
	if f.Account == "" {
		again(opsFieldError(p, opsProblemRequired, "ops.accounts.account"))
		return
	}
	amount, problem := opsParseAmount(f.Amount, wallet.MaxCreditFen)
	if problem != "" {
		again(opsFieldError(p, problem, "ops.accounts.amount"))
		return
	}
	reason, problem := opsOneLine(f.Reason, wallet.MaxReasonLen, true)
	if problem != "" {
		again(opsFieldError(p, problem, "ops.accounts.reason"))
		return
	}
	// The account is an id or an e-mail address; the service takes both.
	_, _, err := s.cfg.Wallet.Credit(p.Context(), p.Account, f.Account, amount, reason, "console:"+f.Key)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		again(p.T("ops.accounts.no_such", f.Account))
		return
	}
	if s.opsRefused(w, r, p, err, again) {
		return
	}
	opsDone(w, r, "/ops/accounts", url.Values{"q": {f.Account}}, "credit", "")
}

// opsConfirmTransfer confirms a customer's bank transfer seen on the
// operator's account, as POST /api/v1/payments/{provider}/{id}/settle.
func (s *Pages) opsConfirmTransfer(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.accounts.title")
	f := opsTransferForm{Provider: strings.TrimSpace(r.PostFormValue("provider")),
		Reference: strings.TrimSpace(r.PostFormValue("reference")), Amount: r.PostFormValue("amount")}
	again := func(msg string) {
		p.Error = msg
		d, err := s.opsAccountsData(p, "", opsCreditForm{Key: gpurent.NewID("ccr")}, f)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		s.site.RenderStatus(w, r, p, http.StatusBadRequest, "ops_accounts", d)
	}
	if f.Provider == "" {
		f.Provider = wallet.BankTransferName
	}
	ref, problem := opsOneLine(f.Reference, opsMaxPaymentRef, true)
	if problem != "" {
		again(opsFieldError(p, problem, "ops.accounts.reference"))
		return
	}
	amount, problem := opsParseAmount(f.Amount, wallet.MaxCreditFen)
	if problem != "" {
		again(opsFieldError(p, problem, "ops.accounts.amount"))
		return
	}
	res, err := s.cfg.Wallet.ConfirmPayment(p.Context(), f.Provider, ref, amount)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		again(p.T("ops.accounts.no_payment", ref))
		return
	}
	if s.opsRefused(w, r, p, err, again) {
		return
	}
	s.log.Info("payment settled by an operator (console)", "operator", p.Account.ID, "provider", f.Provider, "payment", ref)
	q := url.Values{}
	if acc, err := s.cfg.Store.AccountByID(p.Context(), res.Payment.AccountID); err == nil {
		q.Set("q", acc.Email)
	}
	opsDone(w, r, "/ops/accounts", q, "transfer", "")
}
