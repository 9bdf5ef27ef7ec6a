package api

import (
	"net/http"

	"github.com/gpurent/gpurent"
)

// confirmEmailRequest is the body of POST /api/v1/me/email/confirm: the
// token of the verification link mailed to the account's address.
type confirmEmailRequest struct {
	Token string `json:"token"`
}

// handleConfirmEmail proves the signed-in account's address with the
// token of its verification link (single use; another account's, an
// expired or a used one is unauthorized).
func (s *Server) handleConfirmEmail(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req confirmEmailRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if err := s.auth.ConfirmEmail(r.Context(), acc, req.Token); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
