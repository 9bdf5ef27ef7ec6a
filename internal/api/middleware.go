package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// routeUnmatched labels requests that matched no route, keeping the
// metrics' cardinality bounded.
const routeUnmatched = "unmatched"

// routePortHost labels requests to instance ports' host names.
const routePortHost = "port-host"

// httpMetrics are the API's Prometheus metrics.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// newHTTPMetrics registers the Go, process, build and HTTP metrics on reg.
// A collector reg already holds (the composition root may share one
// registry) is reused, not an error.
func newHTTPMetrics(reg *prometheus.Registry, version string, log *slog.Logger) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpurent_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gpurent_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route pattern (agent long polls included).",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route"}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gpurent_build_info",
		Help: "Always 1; the version label names the running build.",
	}, []string{"version"})
	build.WithLabelValues(version).Set(1)

	register := func(c prometheus.Collector) prometheus.Collector {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return are.ExistingCollector
			}
			log.Error("registering a metric failed", slog.String("error", err.Error()))
		}
		return c
	}
	register(collectors.NewGoCollector())
	register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	register(build)
	if c, ok := register(m.requests).(*prometheus.CounterVec); ok {
		m.requests = c
	}
	if h, ok := register(m.duration).(*prometheus.HistogramVec); ok {
		m.duration = h
	}
	return m
}

// methodLabel keeps the method label to the standard methods.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	default:
		return "OTHER"
	}
}

// serve is the root handler: it finds the route, answers unknown routes and
// wrong methods with problems, recovers panics, and records metrics and the
// access log.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	reqID := requestID(r)
	sw.Header().Set("X-Request-Id", reqID)

	// A port host is the port proxy's alone: no route, console page or
	// cookie of the control plane is served there.
	ports := s.portHost(r)
	var pattern string
	if !ports {
		_, pattern = s.mux.Handler(r)
	}
	routeLabel := routeUnmatched
	switch {
	case ports:
		routeLabel = routePortHost
	case pattern != "":
		routeLabel = patternPath(pattern)
	}

	defer func() {
		if rec := recover(); rec != nil {
			if rec == http.ErrAbortHandler {
				panic(rec)
			}
			s.log.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
				slog.String("method", r.Method), slog.String("route", routeLabel),
				slog.String("request_id", reqID),
				slog.String("panic", fmt.Sprint(rec)), slog.String("stack", string(debug.Stack())))
			if !sw.wrote {
				s.writeProblem(sw, r, gpurent.Errorf(gpurent.CodeInternal, "panic"))
			} else {
				// The answer is half written; cut the connection rather
				// than let the client take it for a whole one.
				panic(http.ErrAbortHandler)
			}
		}
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		if changes(r) && status < 400 {
			// Prices, hosts, rentals: what GET /api/v1/gpu-types shows
			// may have changed.
			s.types.invalidate()
		}
		elapsed := time.Since(start)
		s.metrics.requests.WithLabelValues(routeLabel, methodLabel(r.Method), strconv.Itoa(status)).Inc()
		s.metrics.duration.WithLabelValues(routeLabel).Observe(elapsed.Seconds())
		level := slog.LevelInfo
		switch {
		case status >= 500:
			level = slog.LevelError
		case routeLabel == "/healthz" || routeLabel == "/readyz" || routeLabel == "/metrics",
			strings.HasPrefix(routeLabel, "/agent/") && status < 400:
			// Probes and agents' heartbeats and long polls would drown
			// everything else.
			level = slog.LevelDebug
		}
		s.log.LogAttrs(r.Context(), level, "http request",
			slog.String("method", r.Method), slog.String("route", routeLabel),
			slog.String("path", r.URL.Path), slog.Int("status", status),
			slog.Duration("duration", elapsed), slog.Int64("bytes", sw.bytes),
			slog.String("remote", r.RemoteAddr), slog.String("request_id", reqID))
	}()

	if ports || longLived(r, pattern) {
		// The server's read and write timeouts (see Timeouts) would cut
		// these; they end when their client or their stream does. A port
		// host's answers are the customer's app: downloads, uploads and
		// websockets of any length.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
	}
	switch {
	case ports:
		s.access.Proxy.ServeHTTP(sw, r)
	case pattern == "":
		s.serveUnmatched(sw, r, false)
	case pattern == "/" && s.console:
		s.serveUnmatched(sw, r, true)
	default:
		s.mux.ServeHTTP(sw, r)
	}
}

// Timeouts are the HTTP server's: ReadHeader bounds the request's header
// (a slowloris that never finishes one is closed), Read the whole request,
// Write the answer, Idle a kept-alive connection between requests. The
// answers that last by design (agents' long polls, the console's live
// streams, the port proxy's connections and websockets, any upgrade) have
// their deadlines lifted by the handler (see longLived).
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// The control plane's timeouts, for the zero fields of Timeouts.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = time.Minute
	DefaultWriteTimeout      = 2 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
)

// Apply sets t on srv, zero fields taking the defaults.
func (t Timeouts) Apply(srv *http.Server) {
	or := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	srv.ReadHeaderTimeout = or(t.ReadHeader, DefaultReadHeaderTimeout)
	srv.ReadTimeout = or(t.Read, DefaultReadTimeout)
	srv.WriteTimeout = or(t.Write, DefaultWriteTimeout)
	srv.IdleTimeout = or(t.Idle, DefaultIdleTimeout)
}

// changes reports whether r may change what GET /api/v1/gpu-types shows:
// a write to the public API, or an agent's registration (agents' periodic
// reports do not drop the reading; its TTL bounds what they change).
func changes(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return false
	}
	return strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == agentproto.PathRegister
}

// longLived reports whether r is answered over a long time by design: an
// agent's long poll, the console's live streams (server-sent events), the
// browser port proxy (long downloads, uploads, websockets) and any
// protocol upgrade.
func longLived(r *http.Request, pattern string) bool {
	if r.Header.Get("Upgrade") != "" || strings.HasPrefix(r.URL.Path, "/p/") {
		return true
	}
	if r.Method != http.MethodGet {
		return false
	}
	if pattern == "GET "+agentproto.PathDesired || pattern == "GET /api/v1/instances/{id}/logs" || r.URL.Path == "/dashboard/events" {
		return true
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/instances/"); ok {
		id, tail, _ := strings.Cut(rest, "/")
		return id != "" && tail == "events"
	}
	return false
}

// serveUnmatched answers a request no route took: 405 with Allow when the
// path exists under other methods, 404 otherwise, and the mux's redirects
// to canonical paths as they are. With a console mounted, a request that
// fell through to it is the console's unless the path is one of the
// server's under another method or lies under /api/ or /agent/: the API
// answers only in problem+json, never with a console page.
func (s *Server) serveUnmatched(w http.ResponseWriter, r *http.Request, console bool) {
	c := &captureWriter{header: http.Header{}}
	s.table.ServeHTTP(c, r)
	if console && c.status != http.StatusMethodNotAllowed && !apiPath(r.URL.Path) {
		s.mux.ServeHTTP(w, r)
		return
	}
	switch c.status {
	case http.StatusMethodNotAllowed:
		if allow := c.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		p := problemFor(gpurent.Errorf(gpurent.CodeInvalid, "method %s is not allowed here; allowed: %s", r.Method, c.header.Get("Allow")), r.URL.Path)
		p.Status = http.StatusMethodNotAllowed
		p.Title = "Method not allowed"
		writeBody(w, p.Status, contentProblem, p)
	case http.StatusNotFound, 0:
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	default:
		for k, v := range c.header {
			w.Header()[k] = v
		}
		w.WriteHeader(c.status)
		_, _ = w.Write(c.body)
	}
}

// apiPath reports whether path lies under the public or the agents' API,
// where no console page is ever served.
func apiPath(path string) bool {
	return strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/agent/")
}

// patternPath drops the method from a ServeMux pattern.
func patternPath(pattern string) string {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == ' ' {
			return pattern[i+1:]
		}
	}
	return pattern
}

// requestID takes a sane X-Request-Id from the client or makes one.
func requestID(r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if id != "" && len(id) <= 64 && printableASCII(id) {
		return id
	}
	return gpurent.RandomSecret(10)
}

// printableASCII reports whether s holds only visible ASCII and spaces.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// statusWriter remembers the status and size of an answer. Unwrap lets
// http.ResponseController reach the connection (the long poll clears its
// write deadline through it).
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status = code
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush forwards to the underlying writer when it can flush.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if !w.wrote {
			w.WriteHeader(http.StatusOK)
		}
		f.Flush()
	}
}

// captureWriter keeps a whole answer in memory.
type captureWriter struct {
	header http.Header
	status int
	body   []byte
}

func (c *captureWriter) Header() http.Header { return c.header }

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body = append(c.body, b...)
	return len(b), nil
}
