// Package client is the one HTTP client of the control plane's APIs: a
// small typed Go client for the gpurent public API (/api/v1), speaking the
// wire types of internal/apiv1, and, through Do, the transport of the
// agent's API (/agent/v1, internal/agent).
//
// Every method takes a context and returns either the decoded answer or an
// error: a problem+json answer becomes an *APIError (whose Unwrap yields a
// *gpurent.Error, so gpurent.IsCode works on it, and which keeps the HTTP
// status), and a transport failure becomes a *NetworkError that names the
// server that could not be reached.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// maxResponseBytes bounds how much of an answer the client reads, so a
// misbehaving server or proxy cannot exhaust the caller's memory.
const maxResponseBytes = 32 << 20

// IdempotencyHeader is the request header that makes a POST safe to retry.
const IdempotencyHeader = "Idempotency-Key"

// defaultUserAgent is the User-Agent of a client made by New.
const defaultUserAgent = "gpurent-client"

// Client calls one gpurent server. It is safe for concurrent use.
type Client struct {
	server    string
	token     string
	userAgent string
	hc        *http.Client
}

// New returns a client for server (a base URL such as
// "https://gpu.example.com"; a trailing slash is ignored) that authenticates
// with the bearer token (empty: none). A nil httpClient means
// http.DefaultClient; callers bound each call through its context.
func New(server, token string, httpClient *http.Client) *Client {
	return NewWith(server, token, httpClient, Options{})
}

// Options are what a caller other than the CLI sets on its client.
type Options struct {
	// UserAgent names the caller (empty: "gpurent-client"); the agent
	// sends "gpurent-agent/<version>".
	UserAgent string
}

// NewWith is New with options.
func NewWith(server, token string, httpClient *http.Client, o Options) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	if o.UserAgent == "" {
		o.UserAgent = defaultUserAgent
	}
	return &Client{server: strings.TrimRight(server, "/"), token: token, userAgent: o.UserAgent, hc: httpClient}
}

// Server returns the base URL the client talks to.
func (c *Client) Server() string { return c.server }

// APIError is an error answer of the server, decoded from its problem+json
// body (or synthesised from the status when the body is not one).
type APIError struct {
	Status  int
	Problem apiv1.Problem
}

// Error returns the problem's detail followed by its code, e.g.
// "instance not found (not_found)".
func (e *APIError) Error() string {
	msg := e.Problem.Detail
	if msg == "" {
		msg = e.Problem.Title
	}
	if msg == "" {
		msg = fmt.Sprintf("server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Problem.Code == "" {
		return msg
	}
	return msg + " (" + e.Problem.Code + ")"
}

// Code returns the problem's machine code.
func (e *APIError) Code() gpurent.Code { return gpurent.Code(e.Problem.Code) }

// Unwrap exposes the answer as a *gpurent.Error so that callers can branch
// with gpurent.IsCode / gpurent.ErrorCode.
func (e *APIError) Unwrap() error {
	return &gpurent.Error{Code: e.Code(), Message: e.Problem.Detail}
}

// NetworkError is a failure to exchange a request with the server: it could
// not be reached, or the connection broke before a whole answer came back.
// No answer arrived, so the request may or may not have taken effect.
type NetworkError struct {
	Server string
	Err    error
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("cannot reach gpurent server %s: %v", e.Server, e.Err)
}

// Unwrap exposes the failure as a *gpurent.Error with CodeUnavailable (so
// gpurent.IsCode works on it) whose cause is Err.
func (e *NetworkError) Unwrap() error {
	return gpurent.WrapError(gpurent.CodeUnavailable, e.Err, "cannot reach gpurent server %s", e.Server)
}

// StatusOf is the HTTP status of the answer err is (or wraps), or 0 when
// err is no answer of the server (a transport failure, a local refusal).
func StatusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// request is one call: method, path under the server, optional JSON body and
// extra headers.
type request struct {
	method string
	path   string
	body   any
	header http.Header
	// want lists the success statuses; empty means any 2xx.
	want []int
	// token, when set, is the call's bearer instead of the client's.
	token string
	// timeout, when positive, bounds the call on top of its context.
	timeout time.Duration
}

// rawBody receives an answer as it is, for answers that are not JSON.
type rawBody []byte

// Call is one request of the agent's API (or any other under the server)
// for Do.
type Call struct {
	Method string
	Path   string // under the server, with its query
	Body   any    // sent as JSON when not nil
	// Token, when set, is this call's bearer instead of the client's (an
	// agent's token changes when it registers again).
	Token string
	// Timeout, when positive, bounds this call on top of ctx (the agent's
	// long poll waits about 25 s, its reports are short). A call it ends
	// is a *NetworkError; one ctx ends is ctx's error.
	Timeout time.Duration
}

// Do sends c, and decodes a successful answer into out (nil: discard). It
// reports whether a body was decoded: not for 204 No Content, nor with a
// nil out. Errors are those of the typed methods: *APIError (with the
// status) for an error answer or an unreadable one, *NetworkError when no
// answer came, ctx's error once ctx ends.
func (c *Client) Do(ctx context.Context, call Call, out any) (decoded bool, err error) {
	return c.exchange(ctx, request{method: call.Method, path: call.Path, body: call.Body,
		token: call.Token, timeout: call.Timeout}, out)
}

// do sends r and decodes a successful answer into out (nil: discard).
func (c *Client) do(ctx context.Context, r request, out any) error {
	_, err := c.exchange(ctx, r, out)
	return err
}

// exchange is the one transport of the client: it sends r and decodes a
// successful answer into out, reporting whether it did.
func (c *Client) exchange(ctx context.Context, r request, out any) (bool, error) {
	parent := ctx
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	// ctxErr is the caller's context's end; the call's own timeout is a
	// failure to get an answer in time.
	ctxErr := func(err error) error {
		if perr := parent.Err(); perr != nil {
			return perr
		}
		return &NetworkError{Server: c.server, Err: err}
	}
	var payload []byte
	if r.body != nil {
		var err error
		payload, err = json.Marshal(r.body)
		if err != nil {
			return false, gpurent.WrapError(gpurent.CodeInvalid, err, "cannot encode the request")
		}
	}
	var reqBody io.Reader = http.NoBody
	if payload != nil {
		reqBody = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.server+r.path, reqBody)
	if err != nil {
		return false, gpurent.WrapError(gpurent.CodeInvalid, err, "invalid server URL %q", c.server)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", c.userAgent)
	token := c.token
	if r.token != "" {
		token = r.token
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}

	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctxErr(unwrapURLError(err))
		}
		return false, &NetworkError{Server: c.server, Err: unwrapURLError(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return false, ctxErr(fmt.Errorf("reading the answer: %w", err))
		}
		return false, &NetworkError{Server: c.server, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if len(body) > maxResponseBytes {
		return false, &APIError{Status: resp.StatusCode, Problem: synthesised(resp.StatusCode,
			fmt.Sprintf("the answer to %s %s is larger than %d bytes", r.method, r.path, maxResponseBytes))}
	}
	if !successful(resp.StatusCode, r.want) {
		return false, decodeProblem(resp, body)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return false, nil
	}
	if raw, ok := out.(*rawBody); ok { // not JSON: CSV and the like
		*raw = append((*raw)[:0], body...)
		return true, nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return false, &APIError{Status: resp.StatusCode, Problem: synthesised(resp.StatusCode,
			fmt.Sprintf("the server's answer to %s %s is not valid JSON: %v", r.method, r.path, err))}
	}
	return true, nil
}

func successful(status int, want []int) bool {
	if len(want) == 0 {
		return status >= 200 && status < 300
	}
	for _, w := range want {
		if status == w {
			return true
		}
	}
	return false
}

// decodeProblem turns an error answer into an *APIError, keeping the
// server's problem when it sent one.
func decodeProblem(resp *http.Response, body []byte) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/problem+json" || mt == "application/json" {
		var p apiv1.Problem
		if json.Unmarshal(body, &p) == nil && (p.Code != "" || p.Detail != "" || p.Title != "") {
			if p.Status == 0 {
				p.Status = resp.StatusCode
			}
			if p.Code == "" {
				p.Code = string(gpurent.CodeOfHTTPStatus(resp.StatusCode))
			}
			return &APIError{Status: resp.StatusCode, Problem: p}
		}
	}
	detail := fmt.Sprintf("server answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if snippet := printableSnippet(body); snippet != "" && mt == "text/plain" {
		detail += ": " + snippet
	}
	return &APIError{Status: resp.StatusCode, Problem: synthesised(resp.StatusCode, detail)}
}

func synthesised(status int, detail string) apiv1.Problem {
	return apiv1.Problem{
		Type:   "about:blank",
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
		Code:   string(gpurent.CodeOfHTTPStatus(status)),
	}
}

// printableSnippet returns the start of a plain-text body, on one line.
func printableSnippet(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the method
// and full URL, keeping the cause.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}

// NewIdempotencyKey returns a random key (128 bits, hex).
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}
