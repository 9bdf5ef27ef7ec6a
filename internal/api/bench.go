package api

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/certification"
	"github.com/gpurent/gpurent/internal/transparency"
)

// This file serves compute transparency (issue #7): the public report (page,
// JSON, CSV), customers' verify runs, operators' benchmark runs,
// certifications and settings, and the agents' benchmark results.

// maxBenchBodyBytes bounds an agent's benchmark result: a t2 run of eight
// GPUs prints a few hundred kilobytes of records.
const maxBenchBodyBytes = 16 << 20

// certHandler is a handler of an account's request that needs the
// certification service.
type certHandler func(w http.ResponseWriter, r *http.Request, acc *gpurent.Account, svc *certification.Service)

// withCert answers unavailable when the server runs without the
// certification service, and calls h otherwise.
func (s *Server) withCert(h certHandler) func(http.ResponseWriter, *http.Request, *gpurent.Account) {
	return func(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
		if s.cert == nil {
			s.writeProblem(w, r, errNoCert())
			return
		}
		h(w, r, acc, s.cert)
	}
}

func errNoCert() error {
	return gpurent.Errorf(gpurent.CodeUnavailable, "compute transparency is not served by this server")
}

// report is the public report, or false once a problem is written.
func (s *Server) report(w http.ResponseWriter, r *http.Request) (*apiv1.Transparency, bool) {
	if s.cert == nil {
		s.writeProblem(w, r, errNoCert())
		return nil, false
	}
	rep, err := s.cert.Transparency(r.Context())
	if err != nil {
		s.writeProblem(w, r, err)
		return nil, false
	}
	return rep, true
}

// handleTransparency answers GET /api/v1/transparency: the public report.
func (s *Server) handleTransparency(w http.ResponseWriter, r *http.Request) {
	rep, ok := s.report(w, r)
	if !ok {
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=15")
	writeJSON(w, http.StatusOK, rep)
}

// handleTransparencyCSV answers GET /api/v1/transparency.csv.
func (s *Server) handleTransparencyCSV(w http.ResponseWriter, r *http.Request) {
	rep, ok := s.report(w, r)
	if !ok {
		return
	}
	var buf bytes.Buffer
	if err := transparency.CSV(&buf, rep); err != nil {
		s.writeProblem(w, r, gpurent.WrapError(gpurent.CodeInternal, err, "writing the report as CSV failed"))
		return
	}
	w.Header().Set("Content-Disposition", `attachment; filename="gpurent-transparency-`+rep.GeneratedAt.Format("20060102")+`.csv"`)
	w.Header().Set("Cache-Control", "public, max-age=15")
	writeCompressed(w, r, "text/csv; charset=utf-8", buf.Bytes())
}

// writeCompressed answers body, gzipped when the client takes gzip: the
// report of a large fleet is tens of megabytes of very repetitive text.
func writeCompressed(w http.ResponseWriter, r *http.Request, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Add("Vary", "Accept-Encoding")
	if len(body) < 1024 || !acceptsGzip(r.Header.Get("Accept-Encoding")) {
		_, _ = w.Write(body)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return
	}
	_, _ = zw.Write(body)
	_ = zw.Close()
}

// acceptsGzip reads an Accept-Encoding header: gzip (or *) without q=0.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// handleTransparencyPage answers GET /transparency?lang=en|zh: the report as
// a page, public.
func (s *Server) handleTransparencyPage(w http.ResponseWriter, r *http.Request) {
	lang, err := slaLang(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	rep, ok := s.report(w, r)
	if !ok {
		return
	}
	var buf bytes.Buffer
	if err := transparency.Page(&buf, rep, lang); err != nil {
		s.writeProblem(w, r, gpurent.WrapError(gpurent.CodeInternal, err, "rendering the report failed"))
		return
	}
	h := w.Header()
	h.Set("Content-Language", lang)
	h.Set("Vary", "Accept-Language")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("Cache-Control", "public, max-age=15")
	writeCompressed(w, r, "text/html; charset=utf-8", buf.Bytes())
}

// handleVerify answers POST /api/v1/instances/{id}/verify: the suite on the
// caller's own instance.
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request, acc *gpurent.Account, svc *certification.Service) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		var req apiv1.VerifyRequest
		if len(bytes.TrimSpace(body)) > 0 {
			if err := decodeJSON(body, &req); err != nil {
				s.writeProblem(w, r, err)
				return
			}
		}
		j, err := svc.Verify(r.Context(), acc, r.PathValue("id"), strings.TrimSpace(req.Tier))
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		v, err := svc.Job(r.Context(), acc, j.ID)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		writeJSON(w, http.StatusAccepted, v)
	})
}

// handleInstanceVerifies answers GET /api/v1/instances/{id}/verify: the
// instance's verify runs, newest first.
func (s *Server) handleInstanceVerifies(w http.ResponseWriter, r *http.Request, acc *gpurent.Account, svc *certification.Service) {
	list, err := svc.Jobs(r.Context(), acc, gpurent.BenchJobFilter{InstanceID: r.PathValue("id"), Limit: 20})
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// handleBenchJob answers GET /api/v1/bench/jobs/{id}.
func (s *Server) handleBenchJob(w http.ResponseWriter, r *http.Request, acc *gpurent.Account, svc *certification.Service) {
	v, err := svc.Job(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// handleCancelBenchJob answers DELETE /api/v1/bench/jobs/{id}.
func (s *Server) handleCancelBenchJob(w http.ResponseWriter, r *http.Request, acc *gpurent.Account, svc *certification.Service) {
	j, err := svc.Cancel(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	v, err := svc.Job(r.Context(), acc, j.ID)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// handleBenchJobs answers GET /api/v1/bench/jobs?host=&gpu=&open=1&limit=
// (operators).
func (s *Server) handleBenchJobs(w http.ResponseWriter, r *http.Request, acc *gpurent.Account, svc *certification.Service) {
	q := r.URL.Query()
	f := gpurent.BenchJobFilter{HostID: q.Get("host"), GPUID: q.Get("gpu"), InstanceID: q.Get("instance"),
		OpenOnly: q.Get("open") == "1" || q.Get("open") == "true"}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "limit must be 1 to 500, got %q", v))
			return
		}
		f.Limit = n
	}
	list, err := svc.Jobs(r.Context(), acc, f)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// handleBenchRun answers POST /api/v1/bench/jobs (operators): runs now.
func (s *Server) handleBenchRun(w http.ResponseWriter, r *http.Request, acc *gpurent.Account, svc *certification.Service) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		var req apiv1.BenchRunRequest
		if err := decodeJSON(body, &req); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		jobs, skipped, err := svc.RunNow(r.Context(), acc, certification.RunRequest{GPUs: req.GPUs, Hosts: req.Hosts,
			Tier: strings.TrimSpace(req.Tier)})
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		out := apiv1.BenchRunResponse{Jobs: []apiv1.BenchJob{}, Skipped: skipped}
		for _, j := range jobs {
			v, err := svc.Job(r.Context(), acc, j.ID)
			if err != nil {
				s.writeProblem(w, r, err)
				return
			}
			out.Jobs = append(out.Jobs, *v)
		}
		writeJSON(w, http.StatusAccepted, out)
	})
}

// handleGPUCerts answers GET /api/v1/gpus/certification (operators).
func (s *Server) handleGPUCerts(w http.ResponseWriter, r *http.Request, acc *gpurent.Account, svc *certification.Service) {
	list, err := svc.Certs(r.Context(), acc)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if list == nil {
		list = []apiv1.GPUCert{}
	}
	writeJSON(w, http.StatusOK, list)
}

// handleCertSettings answers GET /api/v1/bench/settings (operators).
func (s *Server) handleCertSettings(w http.ResponseWriter, r *http.Request, acc *gpurent.Account, svc *certification.Service) {
	st, err := svc.Settings(r.Context())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, certSettingsView(st))
}

// handleSaveCertSettings answers PUT /api/v1/bench/settings (operators).
func (s *Server) handleSaveCertSettings(w http.ResponseWriter, r *http.Request, acc *gpurent.Account, svc *certification.Service) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.CertSettings
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if req.EveryHours < 0 || req.EveryHours > 90*24 {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "every_hours must be 0 (off) to %d, got %d", 90*24, req.EveryHours))
		return
	}
	st, err := svc.SaveSettings(r.Context(), acc, gpurent.CertSettings{Policy: gpurent.CertPolicy(strings.TrimSpace(req.Policy)),
		Every: time.Duration(req.EveryHours) * time.Hour, Tier: strings.TrimSpace(req.Tier)})
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, certSettingsView(st))
}

func certSettingsView(st *gpurent.CertSettings) apiv1.CertSettings {
	return apiv1.CertSettings{Policy: string(st.Policy), EveryHours: int(st.Every / time.Hour), Tier: st.Tier}
}

// handleAgentBench answers POST /agent/v1/bench: an agent's word on one of
// its benchmark jobs. 204 when taken; 404 when the job is not the host's or
// is finished (the agent drops it).
func (s *Server) handleAgentBench(w http.ResponseWriter, r *http.Request, host *gpurent.Host) {
	if s.cert == nil {
		s.writeProblem(w, r, errNoCert())
		return
	}
	if err := checkJSONContentType(r.Header.Get("Content-Type")); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBenchBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid, "benchmark result is larger than %d bytes", maxBenchBodyBytes))
			return
		}
		s.writeProblem(w, r, gpurent.WrapError(gpurent.CodeInvalid, err, "reading the request body failed"))
		return
	}
	var res agentproto.BenchResult
	if err := decodeJSON(body, &res); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	lines := make([][]byte, len(res.Records))
	for i, rec := range res.Records {
		lines[i] = []byte(rec)
	}
	err = s.cert.Report(r.Context(), host.ID, certification.Result{JobID: res.JobID, State: gpurent.BenchJobState(res.State),
		Error: res.Error, Records: lines})
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
