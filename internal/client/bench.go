package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// This file calls the compute transparency routes: the public report,
// verify runs, benchmark jobs, certifications and settings.

// Transparency fetches the public report (no login needed).
func (c *Client) Transparency(ctx context.Context) (apiv1.Transparency, error) {
	var out apiv1.Transparency
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/transparency"}, &out)
	return out, err
}

// TransparencyCSV fetches the public report as CSV.
func (c *Client) TransparencyCSV(ctx context.Context) ([]byte, error) {
	var out rawBody
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/transparency.csv"}, &out)
	return out, err
}

// Verify starts the benchmark suite on the caller's own running instance
// (tier "" is t1). It carries an Idempotency-Key (idempotencyKey, or a
// random one).
func (c *Client) Verify(ctx context.Context, id, tier, idempotencyKey string) (apiv1.BenchJob, error) {
	var out apiv1.BenchJob
	path, err := instancePath(id, "/verify")
	if err != nil {
		return out, err
	}
	err = c.postAccepted(ctx, path, apiv1.VerifyRequest{Tier: tier}, idempotencyKey, &out)
	return out, err
}

// Verifies lists an instance's verify runs, newest first.
func (c *Client) Verifies(ctx context.Context, id string) ([]apiv1.BenchJob, error) {
	var out []apiv1.BenchJob
	path, err := instancePath(id, "/verify")
	if err != nil {
		return out, err
	}
	err = c.do(ctx, request{method: http.MethodGet, path: path}, &out)
	return out, err
}

func benchJobPath(id string) (string, error) {
	if id == "" {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "a benchmark job id is required")
	}
	return "/api/v1/bench/jobs/" + url.PathEscape(id), nil
}

// BenchJob fetches one job with its results.
func (c *Client) BenchJob(ctx context.Context, id string) (apiv1.BenchJob, error) {
	var out apiv1.BenchJob
	path, err := benchJobPath(id)
	if err != nil {
		return out, err
	}
	err = c.do(ctx, request{method: http.MethodGet, path: path}, &out)
	return out, err
}

// CancelBenchJob cancels an open job.
func (c *Client) CancelBenchJob(ctx context.Context, id string) (apiv1.BenchJob, error) {
	var out apiv1.BenchJob
	path, err := benchJobPath(id)
	if err != nil {
		return out, err
	}
	err = c.do(ctx, request{method: http.MethodDelete, path: path}, &out)
	return out, err
}

// BenchJobs lists jobs (operators): of a host, of a GPU, open only.
func (c *Client) BenchJobs(ctx context.Context, host, gpu string, openOnly bool, limit int) ([]apiv1.BenchJob, error) {
	q := url.Values{}
	if host != "" {
		q.Set("host", host)
	}
	if gpu != "" {
		q.Set("gpu", gpu)
	}
	if openOnly {
		q.Set("open", "1")
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/api/v1/bench/jobs"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out []apiv1.BenchJob
	err := c.do(ctx, request{method: http.MethodGet, path: path}, &out)
	return out, err
}

// RunBenchmarks starts runs now on GPUs or hosts (operators).
func (c *Client) RunBenchmarks(ctx context.Context, req apiv1.BenchRunRequest, idempotencyKey string) (apiv1.BenchRunResponse, error) {
	var out apiv1.BenchRunResponse
	err := c.postAccepted(ctx, "/api/v1/bench/jobs", req, idempotencyKey, &out)
	return out, err
}

// GPUCerts lists every GPU's certification (operators).
func (c *Client) GPUCerts(ctx context.Context) ([]apiv1.GPUCert, error) {
	var out []apiv1.GPUCert
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/gpus/certification"}, &out)
	return out, err
}

// CertSettings reads the certification schedule and policy (operators).
func (c *Client) CertSettings(ctx context.Context) (apiv1.CertSettings, error) {
	var out apiv1.CertSettings
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/bench/settings"}, &out)
	return out, err
}

// SaveCertSettings sets the schedule and policy (operators).
func (c *Client) SaveCertSettings(ctx context.Context, s apiv1.CertSettings) (apiv1.CertSettings, error) {
	var out apiv1.CertSettings
	err := c.do(ctx, request{method: http.MethodPut, path: "/api/v1/bench/settings", body: s}, &out)
	return out, err
}
