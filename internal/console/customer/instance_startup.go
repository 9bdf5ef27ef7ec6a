package customer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/console/web"
)

// InstanceLogs streams an instance's startup-command output from its
// host's agent (the SSH gateway does; api.InstanceLogs is the same).
type InstanceLogs interface {
	Logs(ctx context.Context, accountID, instanceID string, req agentproto.LogsRequest) (io.ReadCloser, error)
}

// The logs panel shows the last lines of the output, polled.
const (
	logsPanelTail = 200
	logsMaxTail   = 2000
	// logsMaxBytes bounds one answer of the panel.
	logsMaxBytes = 1 << 20
)

// startupView fills the page's startup command card.
func startupView(p *web.Page, d *instanceData) {
	in := &d.In
	switch {
	case in.StartupCommand == nil:
		d.StartupText = p.T("startup.image_default")
	case *in.StartupCommand == "":
		d.StartupText, d.StartupNone = p.T("startup.none"), true
	default:
		d.StartupText, d.StartupLine = *in.StartupCommand, *in.StartupCommand
	}
	if st := in.Startup; st != nil {
		d.StartupStatus = startupStatusText(p, st)
		d.StartupBad = st.State == "failed" || st.State == "exited" && (st.ExitCode == nil || *st.ExitCode != 0)
	}
}

// startupStatusText says how the startup command stands, in the page's
// language.
func startupStatusText(p *web.Page, st *gpurent.StartupStatus) string {
	switch st.State {
	case "none":
		return p.T("startup.st.none")
	case "running":
		if st.StartedAt != nil {
			return p.T("startup.st.running_since", formatWhen(*st.StartedAt))
		}
		return p.T("startup.st.running")
	case "exited":
		when := "-"
		if st.ExitedAt != nil {
			when = st.ExitedAt.In(web.Location()).Format("2006-01-02 15:04:05")
		}
		if st.Signal != "" {
			return p.T("startup.st.signal", st.Signal, when)
		}
		code := -1
		if st.ExitCode != nil {
			code = *st.ExitCode
		}
		return p.T("startup.st.exited", code, when)
	case "failed":
		return p.T("startup.st.failed", st.Error)
	}
	return st.State
}

// setStartup answers POST /instances/{id}/startup: the startup command
// from the next start (owner only).
func (s *Pages) setStartup(w http.ResponseWriter, r *http.Request, p *web.Page) {
	id := r.PathValue("id")
	line := strings.TrimSpace(strings.ReplaceAll(r.PostFormValue("startup"), "\r\n", "\n"))
	var cmd *string
	var msg string
	switch r.PostFormValue("mode") {
	case "image":
		if line != "" {
			msg = p.T("startup.both_image")
		}
	case "none":
		cmd, msg = startupOf(p, line, true)
	default:
		if line == "" {
			msg = p.T("common.required", p.T("startup.command"))
		} else {
			cmd, msg = startupOf(p, line, false)
		}
	}
	keep := func(d *instanceData) { d.StartupLine = line }
	if msg != "" {
		p.Error = msg
		s.showInstance(w, r, p, http.StatusBadRequest, keep)
		return
	}
	if _, err := s.cfg.Rental.SetStartupCommand(p.Context(), p.Account, id, cmd); err != nil {
		s.actionFailed(w, r, p, err, keep)
		return
	}
	http.Redirect(w, r, instanceURL(id, "startup"), http.StatusSeeOther)
}

// instanceLogs answers GET /instances/{id}/logs?tail=N for the logs
// panel: the last lines of the startup command's output as text (the
// owner's only: an operator gets not found, as on the API).
func (s *Pages) instanceLogs(w http.ResponseWriter, r *http.Request, p *web.Page) {
	fail := func(status int, text string) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, text)
	}
	tail := logsPanelTail
	if v := r.URL.Query().Get("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > logsMaxTail {
			fail(http.StatusBadRequest, p.T("common.out_of_range", "tail", 1, logsMaxTail))
			return
		}
		tail = n
	}
	id := r.PathValue("id")
	det, err := s.cfg.Rental.Get(p.Context(), p.Account, id)
	if err == nil && det.Instance.AccountID != p.Account.ID {
		err = gpurent.Errorf(gpurent.CodeNotFound, "instance %q not found", id)
	}
	if err != nil {
		fail(web.StatusOf(err), p.T("logs.not_found"))
		return
	}
	if s.cfg.Logs == nil {
		fail(http.StatusServiceUnavailable, p.T("logs.off"))
		return
	}
	if det.Instance.State != gpurent.StateRunning {
		fail(http.StatusConflict, p.T("logs.not_running"))
		return
	}
	rc, err := s.cfg.Logs.Logs(p.Context(), p.Account.ID, id, agentproto.LogsRequest{Tail: tail})
	if err != nil {
		fail(web.StatusOf(err), p.T("logs.failed", gpurent.ErrorMessage(err)))
		return
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, logsMaxBytes))
	if err != nil && !errors.Is(err, io.EOF) && len(b) == 0 {
		fail(http.StatusServiceUnavailable, p.T("logs.failed", gpurent.ErrorMessage(err)))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}
