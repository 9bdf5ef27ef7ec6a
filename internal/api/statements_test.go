package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

func TestStatementRoute(t *testing.T) {
	e := newEnv(t)
	alice, bob, op := e.customer(), e.customer(), e.operator()
	st := decode[apiv1.Statement](t, e.do(req{method: "GET", path: "/api/v1/statements/2026-11", token: alice.token}), http.StatusOK)
	if st.AccountID != alice.acc.ID || st.Month != "2026-11" || st.TimeZone != "Asia/Shanghai" || len(st.Lines) != 0 || st.TotalFen != 0 {
		t.Errorf("empty statement: %+v", st)
	}
	w := e.do(req{method: "GET", path: "/api/v1/statements/2026-11?format=csv", token: alice.token})
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/csv") ||
		!strings.HasPrefix(w.Body.String(), "month,instance_id,") || !strings.Contains(w.Body.String(), "2026-11,,,,,total,,,,,0") {
		t.Errorf("csv: %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
	problem(t, e.do(req{method: "GET", path: "/api/v1/statements/2026-13", token: alice.token}), http.StatusBadRequest, gpurent.CodeInvalid)
	problem(t, e.do(req{method: "GET", path: "/api/v1/statements/2026-11?format=xml", token: alice.token}), http.StatusBadRequest, gpurent.CodeInvalid)
	problem(t, e.do(req{method: "GET", path: "/api/v1/statements/2026-11"}), http.StatusUnauthorized, gpurent.CodeUnauthorized)
	problem(t, e.do(req{method: "GET", path: "/api/v1/statements/2026-11?account=" + bob.acc.ID, token: alice.token}),
		http.StatusForbidden, gpurent.CodeForbidden)
	got := decode[apiv1.Statement](t, e.do(req{method: "GET", path: "/api/v1/statements/2026-11?account=" + bob.acc.ID, token: op.token}), http.StatusOK)
	if got.AccountID != bob.acc.ID {
		t.Errorf("operator reading bob's: %+v", got)
	}
}

func TestRevenueRoute(t *testing.T) {
	e := newEnv(t)
	customer, op := e.customer(), e.operator()
	problem(t, e.do(req{method: "GET", path: "/api/v1/revenue", token: customer.token}), http.StatusForbidden, gpurent.CodeForbidden)
	problem(t, e.do(req{method: "GET", path: "/api/v1/revenue?from=yesterday", token: op.token}), http.StatusBadRequest, gpurent.CodeInvalid)
	problem(t, e.do(req{method: "GET", path: "/api/v1/revenue?from=2026-12-01&to=2026-11-01", token: op.token}), http.StatusBadRequest, gpurent.CodeInvalid)
	rev := decode[apiv1.Revenue](t, e.do(req{method: "GET", path: "/api/v1/revenue?from=2026-11-01&to=2026-12-01", token: op.token}), http.StatusOK)
	if rev.From != "2026-11-01" || rev.To != "2026-12-01" || rev.TimeZone != "Asia/Shanghai" || rev.TotalFen != 0 || len(rev.Days) != 0 {
		t.Errorf("an empty month: %+v", rev)
	}
}
