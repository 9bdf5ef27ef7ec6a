package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// QuoteRequest asks what a planned rental costs.
type QuoteRequest struct {
	GPUType string
	Count   int
	Hours   int
	Start   time.Time // zero: now
	// PricePermille quotes GPUs listed as degraded at this share of the
	// list price (0: the full price).
	PricePermille int
}

// Quote prices a planned rental (public: no token needed).
func (c *Client) Quote(ctx context.Context, r QuoteRequest) (apiv1.Quote, error) {
	q := url.Values{"gpu_type": {r.GPUType}, "count": {strconv.Itoa(r.Count)}, "hours": {strconv.Itoa(r.Hours)}}
	if !r.Start.IsZero() {
		q.Set("start", r.Start.Format(time.RFC3339))
	}
	if r.PricePermille > 0 {
		q.Set("price_permille", strconv.Itoa(r.PricePermille))
	}
	var out apiv1.Quote
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/price?" + q.Encode()}, &out)
	return out, err
}

// Prices lists the versions of the price list.
func (c *Client) Prices(ctx context.Context) (apiv1.PriceVersionList, error) {
	var out apiv1.PriceVersionList
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/prices"}, &out)
	return out, err
}

// AddPrices adds a version of the price list (operators).
func (c *Client) AddPrices(ctx context.Context, req apiv1.AddPriceVersionRequest) (apiv1.PriceVersion, error) {
	var out apiv1.PriceVersion
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/prices", body: req,
		header: http.Header{IdempotencyHeader: {NewIdempotencyKey()}}, want: []int{http.StatusCreated}}, &out)
	return out, err
}
