package api

import (
	"net/http"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

func academicView(a *gpurent.AcademicApplication, audit []gpurent.AcademicAuditEntry) apiv1.AcademicApplication {
	v := apiv1.AcademicApplication{ID: a.ID, AccountID: a.AccountID, Method: string(a.Method), Institution: a.Institution,
		Email: a.Email, Proof: a.Proof, State: string(a.State), DecidedAt: a.DecidedAt, Reason: a.Reason,
		VerifiedUntil: a.VerifiedUntil, CreatedAt: a.CreatedAt}
	for _, e := range audit {
		v.Audit = append(v.Audit, apiv1.AcademicAuditEntry{At: e.At, Actor: e.Actor, Action: e.Action, Note: e.Note})
	}
	return v
}

// handleAcademicApply answers POST /api/v1/academic/applications.
func (s *Server) handleAcademicApply(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.AcademicApplyRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		a, err := s.academic.Apply(r.Context(), acc, gpurent.AcademicMethod(req.Method), req.Institution, req.Proof)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		w.Header().Set("Location", "/api/v1/academic/applications/"+a.ID)
		writeJSON(w, http.StatusCreated, academicView(a, nil))
	})
}

// handleAcademicList answers GET /api/v1/academic/applications[?all=true][&state=S].
func (s *Server) handleAcademicList(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	all, err := queryBool(r, "all")
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	list, err := s.academic.List(r.Context(), acc, all, gpurent.AcademicState(r.URL.Query().Get("state")))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := apiv1.AcademicApplicationList{Applications: []apiv1.AcademicApplication{}}
	for i := range list {
		out.Applications = append(out.Applications, academicView(&list[i], nil))
	}
	writeJSON(w, http.StatusOK, out)
}

// handleAcademicGet answers GET /api/v1/academic/applications/{id}.
func (s *Server) handleAcademicGet(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	a, audit, err := s.academic.Get(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, academicView(a, audit))
}

// handleAcademicDecide answers POST .../{id}/approve and .../{id}/reject.
func (s *Server) handleAcademicDecide(approve bool) func(http.ResponseWriter, *http.Request, *gpurent.Account) {
	return func(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
		body, err := readBody(w, r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		var req apiv1.AcademicDecision
		if len(body) > 0 {
			if err := decodeJSON(body, &req); err != nil {
				s.writeProblem(w, r, err)
				return
			}
		}
		a, err := s.academic.Decide(r.Context(), acc, r.PathValue("id"), approve, req.Note)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		_, audit, err := s.academic.Get(r.Context(), acc, a.ID)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, academicView(a, audit))
	}
}
