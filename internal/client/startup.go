package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// SetStartupCommand changes an instance's startup command from its next
// start: cmd (a shell line, or "" for none), or nil for the image's own
// entrypoint and command.
func (c *Client) SetStartupCommand(ctx context.Context, id string, cmd *string) (apiv1.SetStartupResult, error) {
	var out apiv1.SetStartupResult
	path, err := instancePath(id, "/startup")
	if err != nil {
		return out, err
	}
	body := apiv1.SetStartupRequest{StartupCommand: cmd, ImageDefault: cmd == nil}
	err = c.do(ctx, request{method: http.MethodPut, path: path, body: body}, &out)
	return out, err
}

// LogsOptions choose what InstanceLogs streams.
type LogsOptions struct {
	Follow bool
	// Since is an RFC 3339 time or a duration before now ("10m"); "" all.
	Since string
	Tail  int // last lines only; 0 all
}

// InstanceLogs streams the instance's startup-command output: the body
// as it comes, to be closed by the caller. With Follow it lasts until
// the instance stops or ctx ends (no per-request timeout applies).
func (c *Client) InstanceLogs(ctx context.Context, id string, o LogsOptions) (io.ReadCloser, error) {
	path, err := instancePath(id, "/logs")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if o.Follow {
		q.Set("follow", "true")
	}
	if o.Since != "" {
		q.Set("since", o.Since)
	}
	if o.Tail > 0 {
		q.Set("tail", strconv.Itoa(o.Tail))
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.server+path, http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain, application/problem+json")
	req.Header.Set("User-Agent", "gpurent-client")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := *c.hc
	hc.Timeout = 0 // a followed stream lasts as long as the instance runs
	resp, err := hc.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, &NetworkError{Server: c.server, Err: unwrapURLError(err)}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return nil, &NetworkError{Server: c.server, Err: fmt.Errorf("reading the answer: %w", err)}
		}
		return nil, decodeProblem(resp, body)
	}
	return resp.Body, nil
}
