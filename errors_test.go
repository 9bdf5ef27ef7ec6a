package gpurent_test

import (
	"testing"

	"github.com/gpurent/gpurent"
)

// TestHTTPStatusTable: the code→status and status→code directions are
// inverse where they should be. Every code has its own status and reads back
// from it; every status reads as a code whose status is of the same class
// (4xx stays the caller's fault, 5xx the server's), but for 408 Request
// Timeout, which is a "try again" like 503.
func TestHTTPStatusTable(t *testing.T) {
	seen := map[int]gpurent.Code{}
	for _, c := range gpurent.Codes() {
		s := gpurent.HTTPStatus(c)
		if s < 400 || s > 599 {
			t.Errorf("HTTPStatus(%s) = %d, not an error status", c, s)
		}
		if other, dup := seen[s]; dup {
			t.Errorf("HTTPStatus(%s) = HTTPStatus(%s) = %d: two codes, one status", c, other, s)
		}
		seen[s] = c
		if back := gpurent.CodeOfHTTPStatus(s); back != c {
			t.Errorf("CodeOfHTTPStatus(HTTPStatus(%s) = %d) = %s", c, s, back)
		}
	}
	if s := gpurent.HTTPStatus("no_such_code"); s != 500 {
		t.Errorf("HTTPStatus of an unknown code = %d, want 500", s)
	}
	for s := 100; s < 600; s++ {
		c := gpurent.CodeOfHTTPStatus(s)
		back := gpurent.HTTPStatus(c)
		if _, own := seen[s]; own && back != s {
			t.Errorf("HTTPStatus(CodeOfHTTPStatus(%d) = %s) = %d", s, c, back)
		}
		if s >= 400 && s != 408 && back/100 != s/100 {
			t.Errorf("status %d reads as %s, whose status %d is of another class", s, c, back)
		}
	}
	for s, want := range map[int]gpurent.Code{422: gpurent.CodeInvalid, 405: gpurent.CodeInvalid, 408: gpurent.CodeUnavailable,
		502: gpurent.CodeUnavailable, 504: gpurent.CodeUnavailable, 501: gpurent.CodeInternal, 200: gpurent.CodeInternal} {
		if got := gpurent.CodeOfHTTPStatus(s); got != want {
			t.Errorf("CodeOfHTTPStatus(%d) = %s, want %s", s, got, want)
		}
	}
}
