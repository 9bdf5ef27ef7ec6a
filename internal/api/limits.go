package api

import (
	"net/http"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/wallet"
)

func limitsView(v *wallet.LimitsView) apiv1.SpendLimits {
	return apiv1.SpendLimits{DailyFen: v.DailyFen, MonthlyFen: v.MonthlyFen, StopRunning: v.StopRunning,
		SpentTodayFen: v.SpentTodayFen, SpentMonthFen: v.SpentMonthFen, Reached: v.Reached}
}

// handleGetLimits answers GET /api/v1/wallet/limits.
func (s *Server) handleGetLimits(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	v, err := s.wallet.Limits(r.Context(), acc)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, limitsView(v))
}

// handleSetLimits answers PUT /api/v1/wallet/limits.
func (s *Server) handleSetLimits(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.SetSpendLimitsRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	v, err := s.wallet.SetLimits(r.Context(), acc, gpurent.SpendLimits{DailyFen: req.DailyFen, MonthlyFen: req.MonthlyFen,
		StopRunning: req.StopRunning})
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, limitsView(v))
}
