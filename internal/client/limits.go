package client

import (
	"context"
	"net/http"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// SpendLimits returns the caller's spend limits and spending.
func (c *Client) SpendLimits(ctx context.Context) (apiv1.SpendLimits, error) {
	var out apiv1.SpendLimits
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/wallet/limits"}, &out)
	return out, err
}

// SetSpendLimits sets the caller's spend limits (0: no cap).
func (c *Client) SetSpendLimits(ctx context.Context, req apiv1.SetSpendLimitsRequest) (apiv1.SpendLimits, error) {
	var out apiv1.SpendLimits
	err := c.do(ctx, request{method: http.MethodPut, path: "/api/v1/wallet/limits", body: req}, &out)
	return out, err
}
