package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// maxResponse bounds what the agent reads from one answer.
const maxResponse = 32 << 20

// statusError is the cause of an error the control plane answered with.
type statusError struct{ status int }

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d", e.status) }

// codeForStatus maps the control plane's HTTP answer to an error code.
func codeForStatus(status int) gpurent.Code {
	switch {
	case status == http.StatusUnauthorized:
		return gpurent.CodeUnauthorized
	case status == http.StatusForbidden:
		return gpurent.CodeForbidden
	case status == http.StatusNotFound:
		return gpurent.CodeNotFound
	case status == http.StatusConflict:
		return gpurent.CodeConflict
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests, status >= 500:
		return gpurent.CodeUnavailable
	case status >= 400:
		return gpurent.CodeInvalid
	default:
		return gpurent.CodeInternal
	}
}

// call sends one request to the control plane. in (if not nil) is sent as
// JSON; a 2xx answer with a body is decoded into out (if not nil). It
// reports whether a body was decoded. token, if set, goes in as a bearer.
func (a *Agent) call(ctx context.Context, method, path, token string, timeout time.Duration, in, out any) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return false, gpurent.WrapError(gpurent.CodeInternal, err, "encode %s request", path)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.baseURL+path, body)
	if err != nil {
		return false, gpurent.WrapError(gpurent.CodeInternal, err, "build %s request", path)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "gpurent-agent/"+a.cfg.Version)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return false, gpurent.WrapError(gpurent.CodeUnavailable, err, "control plane unreachable")
	}
	defer resp.Body.Close()
	lr := io.LimitReader(resp.Body, maxResponse)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return false, answerError(path, resp.StatusCode, lr)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, lr) // keep the connection reusable
		return false, nil
	}
	if err := json.NewDecoder(lr).Decode(out); err != nil {
		return false, gpurent.WrapError(gpurent.CodeUnavailable, err, "control plane sent an unreadable %s answer", path)
	}
	_, _ = io.Copy(io.Discard, lr)
	return true, nil
}

// postBench posts one benchmark result, retrying with the agent's backoff
// while the control plane is unreachable or answers 5xx, and registering
// again when it rejects the token. It returns nil once the result is
// taken, ctx's error when ctx ends first, and the control plane's refusal
// otherwise (not_found: the job is unknown or finished).
func (a *Agent) postBench(ctx context.Context, res agentproto.BenchResult) error {
	bo := newBackoff(a.cfg.RetryMin, a.cfg.RetryMax)
	for {
		token := a.token()
		_, err := a.call(ctx, "POST", agentproto.PathBench, token, requestTimeout, res, nil)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case gpurent.IsCode(err, gpurent.CodeUnauthorized):
			if rerr := a.reauth(ctx, token); rerr == nil {
				continue
			} else if ctx.Err() == nil {
				a.log.Warn("agent: cannot register again to post a benchmark result", "job", res.JobID, "err", rerr)
			}
		case permanent(err):
			return err
		}
		delay := bo.next()
		a.log.Warn("agent: cannot post a benchmark result; retrying", "job", res.JobID, "state", res.State,
			"err", err, "retry_in", delay)
		if !sleepCtx(ctx, delay) {
			return ctx.Err()
		}
	}
}

// answerError turns a non-2xx answer into an error, with the problem+json
// detail when there is one.
func answerError(path string, status int, body io.Reader) error {
	b, _ := io.ReadAll(io.LimitReader(body, 64<<10))
	detail := ""
	var p apiv1.Problem
	if json.Unmarshal(b, &p) == nil {
		detail = p.Detail
		if detail == "" {
			detail = p.Title
		}
	}
	if detail == "" {
		detail = strings.TrimSpace(string(b))
		if len(detail) > 200 {
			detail = detail[:200]
		}
	}
	msg := fmt.Sprintf("control plane answered %s with %d %s", path, status, http.StatusText(status))
	if detail != "" {
		msg += ": " + detail
	}
	return gpurent.WrapError(codeForStatus(status), &statusError{status: status}, "%s", msg)
}

// backoff is a doubling delay with jitter, bounded by max.
type backoff struct {
	min, max, cur time.Duration
}

func newBackoff(min, max time.Duration) *backoff { return &backoff{min: min, max: max} }

// next returns the next delay: uniformly in [d/2, d], d doubling from min
// up to max. Jitter spreads a fleet of agents over the retry window when
// the control plane comes back.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	return jitter(b.cur)
}

func (b *backoff) reset() { b.cur = 0 }

func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
