package api

import (
	"net/http"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/rating"
)

// handleStatement answers GET /api/v1/statements/{month}[?format=csv]
// [&account=ID (operators)].
func (s *Server) handleStatement(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	loc, err := rating.LoadBillingZone()
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	month, err := time.ParseInLocation("2006-01", r.PathValue("month"), loc)
	if err != nil {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "month must look like 2026-11"))
		return
	}
	of := acc
	if id := r.URL.Query().Get("account"); id != "" && id != acc.ID {
		if acc.Role != gpurent.RoleOperator {
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeForbidden, "only operators read other accounts' statements"))
			return
		}
		if of, err = s.store.AccountByID(r.Context(), id); err != nil {
			s.writeProblem(w, r, err)
			return
		}
	}
	st, err := s.metering.Statement(r.Context(), s.billing, of, month)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := apiv1.Statement{AccountID: st.AccountID, Month: st.Month.Format("2006-01"), TimeZone: rating.BillingZone,
		Open: st.Open, Final: st.Final, TotalFen: st.TotalFen, Lines: []apiv1.StatementLine{}}
	if st.Final {
		t := st.FinalizedAt.UTC()
		out.FinalizedAt = &t
	}
	for _, l := range st.Lines {
		out.Lines = append(out.Lines, apiv1.StatementLine{InstanceID: l.InstanceID, InstanceName: l.InstanceName,
			GPUType: l.TypeID, GPUs: l.GPUCount, Window: l.Window, RateFen: l.RateFen, Units: l.Units,
			Seconds: l.Seconds, Exact: l.ExactText, Fen: l.Fen, ListRateFen: l.ListRateFen, PricePermille: l.PricePermille})
	}
	switch r.URL.Query().Get("format") {
	case "", "json":
		writeJSON(w, http.StatusOK, out)
	case "csv":
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="gpurent-`+out.Month+`.csv"`)
		w.WriteHeader(http.StatusOK)
		_ = st.WriteCSV(w) // the status is sent: a broken connection is all that can fail
	default:
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "format must be json or csv"))
	}
}
