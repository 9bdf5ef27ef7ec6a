package client

import (
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// Statement returns the month's ("2026-11") usage statement.
func (c *Client) Statement(ctx context.Context, month string) (apiv1.Statement, error) {
	var out apiv1.Statement
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/statements/" + url.PathEscape(month)}, &out)
	return out, err
}

// StatementCSV writes the month's statement as CSV to w.
func (c *Client) StatementCSV(ctx context.Context, month string, w io.Writer) error {
	var raw rawBody
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/statements/" + url.PathEscape(month) + "?format=csv"}, &raw); err != nil {
		return err
	}
	_, err := w.Write(raw)
	return err
}
