package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// Media types the API speaks.
const (
	contentJSON    = "application/json"
	contentProblem = "application/problem+json"
)

// problemTypePrefix starts every problem's type URI; the code completes it.
const problemTypePrefix = "urn:gpurent:problem:"

// titleOf is the short, fixed summary of a code.
func titleOf(code gpurent.Code) string {
	switch code {
	case gpurent.CodeInvalid:
		return "Invalid request"
	case gpurent.CodeUnauthorized:
		return "Authentication required"
	case gpurent.CodePaymentRequired:
		return "Insufficient balance"
	case gpurent.CodeForbidden:
		return "Forbidden"
	case gpurent.CodeNotFound:
		return "Not found"
	case gpurent.CodeConflict:
		return "Conflict"
	case gpurent.CodeUnavailable:
		return "Service unavailable"
	case gpurent.CodeTooManyRequests:
		return "Too many requests"
	default:
		return "Internal server error"
	}
}

// problemFor builds the problem body for err at path.
func problemFor(err error, path string) apiv1.Problem {
	code := gpurent.ErrorCode(err)
	return apiv1.Problem{
		Type:     problemTypePrefix + string(code),
		Title:    titleOf(code),
		Status:   gpurent.HTTPStatus(code),
		Detail:   gpurent.ErrorMessage(err),
		Instance: path,
		Code:     string(code),
	}
}

// writeProblem answers err as problem+json. Internal causes are logged with
// the request, never shown.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
		// The client went away (an agent ending a long poll, say): nobody
		// reads the answer, and it is no server error.
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "client gone", slog.String("path", r.URL.Path))
		return
	}
	p := problemFor(err, r.URL.Path)
	if p.Status >= 500 {
		s.log.LogAttrs(r.Context(), slog.LevelError, "request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("code", p.Code), slog.String("error", err.Error()))
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gpurent"`)
	}
	writeBody(w, p.Status, contentProblem, p)
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeBody(w, status, contentJSON, v)
}

// writeBody encodes v first, so an encoding failure still answers cleanly.
func writeBody(w http.ResponseWriter, status int, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		contentType = contentProblem
		status = http.StatusInternalServerError
		b, _ = json.Marshal(problemFor(gpurent.WrapError(gpurent.CodeInternal, err, "encoding the answer failed"), ""))
	}
	b = append(b, '\n')
	writeRaw(w, status, contentType, b)
}

// writeRaw answers already encoded bytes.
func writeRaw(w http.ResponseWriter, status int, contentType string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
