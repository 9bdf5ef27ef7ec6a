package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/client"
)

// The agent speaks to the control plane's agent API (/agent/v1) through
// internal/client, the one HTTP client of the control plane's APIs: its
// transport, problem+json decoding and 32 MiB answer bound. call adds what
// the agent says of a failure (its messages name the path, and every
// failure without an answer reads as the control plane unreachable).

// call sends one request to the control plane. in (if not nil) is sent as
// JSON; a 2xx answer with a body is decoded into out (if not nil). It
// reports whether a body was decoded. token, if set, goes in as a bearer;
// timeout bounds the call.
func (a *Agent) call(ctx context.Context, method, path, token string, timeout time.Duration, in, out any) (bool, error) {
	got, err := a.api.Do(ctx, client.Call{Method: method, Path: path, Body: in, Token: token, Timeout: timeout}, out)
	if err == nil {
		return got, nil
	}
	var ae *client.APIError
	switch {
	case !errors.As(err, &ae):
		return false, gpurent.WrapError(gpurent.CodeUnavailable, err, "control plane unreachable")
	case ae.Status >= 200 && ae.Status <= 299: // answered, but not in JSON or too large
		return false, gpurent.WrapError(gpurent.CodeUnavailable, err, "control plane sent an unreadable %s answer", path)
	}
	return false, answerError(path, ae)
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

// answerError says an error answer of the control plane: the path, the
// status and the problem's detail. It wraps ae, so the status stays
// (client.StatusOf) and gpurent.IsCode reads the problem's code.
func answerError(path string, ae *client.APIError) error {
	detail := ae.Problem.Detail
	if detail == "" {
		detail = ae.Problem.Title
	}
	// An answer that is no problem+json is said by its status once.
	if rest, ok := strings.CutPrefix(detail, fmt.Sprintf("server answered %d %s", ae.Status, http.StatusText(ae.Status))); ok {
		detail = strings.TrimPrefix(rest, ": ")
	}
	msg := fmt.Sprintf("control plane answered %s with %d %s", path, ae.Status, http.StatusText(ae.Status))
	if detail != "" {
		msg += ": " + detail
	}
	return gpurent.WrapError(ae.Code(), answered{ae}, "%s", msg)
}

// answered is an error answer kept as the cause of the agent's error: it
// reads as its status (the message says the rest) and unwraps to the
// client's APIError.
type answered struct{ ae *client.APIError }

func (e answered) Error() string { return fmt.Sprintf("HTTP %d", e.ae.Status) }
func (e answered) Unwrap() error { return e.ae }

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
