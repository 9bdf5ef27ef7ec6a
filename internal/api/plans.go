package api

import (
	"net/http"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

func planChangeView(c *gpurent.PlanChange) *apiv1.PlanChange {
	if c == nil {
		return nil
	}
	return &apiv1.PlanChange{ID: c.ID, InstanceID: c.InstanceID, From: string(c.From), To: string(c.To),
		EffectiveAt: c.EffectiveAt.UTC(), State: c.State}
}

// handleChangePlan converts an instance between plans; a conversion to a
// package charges its first period, so it takes an Idempotency-Key.
func (s *Server) handleChangePlan(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		var req apiv1.ChangePlanRequest
		if err := decodeJSON(body, &req); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		id := r.PathValue("id")
		res, err := s.metering.ChangePlan(r.Context(), s.billing, acc, id, gpurent.Plan(req.Plan))
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if res.Unpaid { // the wallet changed between the check and the charge
			if err := s.rental.StopUnpaid(r.Context(), id); err != nil {
				s.log.Error("stopping an instance whose package went unpaid", "instance", id, "err", err)
			}
		}
		writeJSON(w, http.StatusOK, apiv1.ChangePlanResult{Change: planChangeView(res.Change), Canceled: planChangeView(res.Canceled),
			ChargedFen: res.ChargedFen})
	})
}

// handlePlanHistory lists an instance's plan changes.
func (s *Server) handlePlanHistory(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	d, err := s.rental.Get(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	changes, err := s.store.PlanChanges(r.Context(), d.Instance.ID)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := apiv1.PlanHistory{InstanceID: d.Instance.ID, Plan: string(d.Instance.Plan), Changes: []apiv1.PlanChange{}}
	for i := range changes {
		out.Changes = append(out.Changes, *planChangeView(&changes[i]))
	}
	writeJSON(w, http.StatusOK, out)
}
