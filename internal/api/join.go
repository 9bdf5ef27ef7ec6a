package api

import (
	"bytes"
	"net/http"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// --- operator: join tokens and host resets ---

func joinTokenView(t *gpurent.JoinToken, now time.Time) apiv1.JoinToken {
	return apiv1.JoinToken{ID: t.ID, Zone: t.ZoneID, Name: t.Name, HostID: t.HostID, State: t.State(now),
		CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, UsedAt: t.UsedAt, UsedName: t.UsedName,
		RevokedAt: t.RevokedAt}
}

func (s *Server) handleCreateJoinToken(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.CreateJoinTokenRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if req.Zone == "" {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "zone is required"))
		return
	}
	secret, jt, err := s.fleet.CreateJoinToken(r.Context(), acc, req.Zone, req.Name, time.Duration(req.TTLSeconds)*time.Second)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, apiv1.CreatedJoinToken{JoinToken: joinTokenView(jt, jt.CreatedAt), Token: secret})
}

func (s *Server) handleListJoinTokens(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	list, err := s.fleet.JoinTokens(r.Context(), acc)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	now := s.now()
	out := apiv1.JoinTokenList{JoinTokens: make([]apiv1.JoinToken, 0, len(list))}
	for i := range list {
		out.JoinTokens = append(out.JoinTokens, joinTokenView(&list[i], now))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleRevokeJoinToken(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	if err := s.fleet.RevokeJoinToken(r.Context(), acc, r.PathValue("id")); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleResetHost invalidates a host's agent credential and answers the
// join token that re-registers it.
func (s *Server) handleResetHost(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.HostResetRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeJSON(body, &req); err != nil {
			s.writeProblem(w, r, err)
			return
		}
	}
	secret, jt, err := s.fleet.ResetHost(r.Context(), acc, r.PathValue("id"), time.Duration(req.TTLSeconds)*time.Second)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	h, err := s.fleet.Host(r.Context(), acc, jt.HostID)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, apiv1.HostReset{Host: hostView(h),
		JoinToken: apiv1.CreatedJoinToken{JoinToken: joinTokenView(jt, jt.CreatedAt), Token: secret}})
}
