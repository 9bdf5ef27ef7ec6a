package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/rental"
)

// InstanceLogs streams an instance's startup-command output from the
// agent of its host (the SSH gateway does, internal/sshgate). It refuses,
// with its codes, an instance accountID does not own or that is not
// running. The reader ends with the stream (io.EOF) or the agent's error;
// Close ends it at any time.
type InstanceLogs interface {
	Logs(ctx context.Context, accountID, instanceID string, req agentproto.LogsRequest) (io.ReadCloser, error)
}

// MaxLogsTail bounds tail= of GET /instances/{id}/logs.
const MaxLogsTail = 100_000

// handleSetStartup answers PUT /api/v1/instances/{id}/startup: the
// instance's startup command from its next start.
func (s *Server) handleSetStartup(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.SetStartupRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	switch {
	case req.ImageDefault && req.StartupCommand != nil:
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid,
			"give startup_command or image_default, not both"))
		return
	case !req.ImageDefault && req.StartupCommand == nil:
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid,
			`give startup_command (a shell line, or "" for none) or image_default: true (the image's own entrypoint and command)`))
		return
	}
	d, err := s.rental.SetStartupCommand(r.Context(), acc, r.PathValue("id"), req.StartupCommand)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	msg := "startup command: " + rental.DescribeStartupCommand(d.Instance.StartupCommand) + "; it applies at the next start"
	if d.Instance.State == gpurent.StateRunning || d.Instance.State == gpurent.StateProvisioning {
		msg += " (stop and start the instance to run it now)"
	}
	writeJSON(w, http.StatusOK, apiv1.SetStartupResult{Instance: instanceView(d, false), Applies: "next_start", Message: msg})
}

// logsQuery reads follow=, since= (RFC 3339, or a duration before now
// such as 10m) and tail= of GET /instances/{id}/logs.
func logsQuery(r *http.Request, now time.Time) (agentproto.LogsRequest, error) {
	var req agentproto.LogsRequest
	q := r.URL.Query()
	follow, err := queryBool(r, "follow")
	if err != nil {
		return req, err
	}
	req.Follow = follow
	if v := q.Get("since"); v != "" {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			req.Since = t.UTC()
		} else if d, err := time.ParseDuration(v); err == nil && d > 0 && d <= 366*24*time.Hour {
			req.Since = now.Add(-d).UTC()
		} else {
			return req, gpurent.Errorf(gpurent.CodeInvalid,
				"since must be an RFC 3339 time (2026-12-02T03:04:05Z) or a positive duration such as 10m or 2h, got %q", v)
		}
	}
	if v := q.Get("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxLogsTail {
			return req, gpurent.Errorf(gpurent.CodeInvalid, "tail must be a number of lines from 0 (all) to %d, got %q", MaxLogsTail, v)
		}
		req.Tail = n
	}
	return req, nil
}

// handleLogs answers GET /api/v1/instances/{id}/logs: the startup
// command's output as text/plain, flushed as it comes; with follow=true
// it lasts until the instance stops or the client goes. Only the owner
// reads an instance's logs (they are the customer's data: an operator's
// account gets not found as another customer's would).
func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	req, err := logsQuery(r, s.now())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	id := r.PathValue("id")
	d, err := s.rental.Get(r.Context(), acc, id)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if d.Instance.AccountID != acc.ID {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeNotFound, "instance %q not found", id))
		return
	}
	if s.logs == nil {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeUnavailable, "logs are not served here: this control plane runs no SSH gateway (gpurent serve --ssh-listen)"))
		return
	}
	if st := d.Instance.State; st != gpurent.StateRunning {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeConflict,
			"instance %s is %s: its logs are read from its host while it runs; start it with `gpurent start %s`", id, st, id))
		return
	}
	rc, err := s.logs.Logs(r.Context(), acc.ID, id, req)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flush := func() { _ = http.NewResponseController(w).Flush() }
	flush()
	buf := make([]byte, 32<<10)
	for {
		n, rerr := rc.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the client went
			}
			flush()
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) && r.Context().Err() == nil {
				// The answer is under way: the error ends the text.
				fmt.Fprintf(w, "\n[gpurent] the logs stream ended: %s\n", strings.TrimSpace(gpurent.ErrorMessage(rerr)))
				flush()
			}
			return
		}
	}
}
