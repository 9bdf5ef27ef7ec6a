package api

import (
	"net/http"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/rating"
)

// handleRevenue answers GET /api/v1/revenue[?from=2026-11-01&to=2026-12-01]
// (operators): days in Asia/Shanghai, to exclusive; default this month.
func (s *Server) handleRevenue(w http.ResponseWriter, r *http.Request, _ *gpurent.Account) {
	loc, err := rating.LoadBillingZone()
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	now := s.now().In(loc)
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, loc)
	to := from.AddDate(0, 1, 0)
	for name, dst := range map[string]*time.Time{"from": &from, "to": &to} {
		if v := r.URL.Query().Get(name); v != "" {
			t, err := time.ParseInLocation(time.DateOnly, v, loc)
			if err != nil {
				s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "%s must be a date like 2026-11-01", name))
				return
			}
			*dst = t
		}
	}
	rev, err := s.metering.Revenue(r.Context(), from, to, loc)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := apiv1.Revenue{From: from.Format(time.DateOnly), To: to.Format(time.DateOnly), TimeZone: rating.BillingZone,
		Days: []apiv1.RevenueDay{}, ByType: rev.ByType, TotalFen: rev.TotalFen}
	for _, d := range rev.Days {
		out.Days = append(out.Days, apiv1.RevenueDay{Day: d.Day, TotalFen: d.TotalFen, ByType: d.ByType})
	}
	writeJSON(w, http.StatusOK, out)
}
