package agent

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ProbePath is where ServeProbe answers.
const ProbePath = "/probe"

// ProbeHandler answers the console's zone latency test at this host's
// site: GET or HEAD /probe with an empty 204, never cached, readable from
// any origin (it tells nothing), and the timing visible to the page.
func ProbeHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(ProbePath, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Timing-Allow-Origin", "*")
		h.Set("Cache-Control", "no-store")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			w.WriteHeader(http.StatusNoContent)
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD")
			w.WriteHeader(http.StatusNoContent)
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
	return mux
}

// ServeProbe serves ProbeHandler on the listener until ctx ends.
func ServeProbe(ctx context.Context, l net.Listener, log *slog.Logger) {
	srv := &http.Server{Handler: ProbeHandler(), ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("agent: the latency probe stopped", "addr", l.Addr().String(), "err", err)
	}
}
