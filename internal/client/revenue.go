package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// Revenue returns the operator's revenue report for [from, to) ("" for
// this month).
func (c *Client) Revenue(ctx context.Context, from, to string) (apiv1.Revenue, error) {
	q := url.Values{}
	if from != "" {
		q.Set("from", from)
	}
	if to != "" {
		q.Set("to", to)
	}
	path := "/api/v1/revenue"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out apiv1.Revenue
	err := c.do(ctx, request{method: http.MethodGet, path: path}, &out)
	return out, err
}
