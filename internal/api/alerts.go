package api

import (
	"net/http"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// handleAccountEvents answers GET /api/v1/wallet/events.
func (s *Server) handleAccountEvents(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	evs, hook, err := s.wallet.Events(r.Context(), acc, 100)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := apiv1.AccountEvents{WebhookURL: hook, Events: []apiv1.AccountEvent{}}
	for _, e := range evs {
		out.Events = append(out.Events, apiv1.AccountEvent{At: e.At, Kind: e.Kind, Message: e.Message})
	}
	writeJSON(w, http.StatusOK, out)
}

// handleSetWebhook answers PUT /api/v1/wallet/webhook.
func (s *Server) handleSetWebhook(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.SetWebhookRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if err := s.wallet.SetWebhook(r.Context(), acc, req.URL); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.handleAccountEvents(w, r, acc)
}
