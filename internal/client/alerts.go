package client

import (
	"context"
	"net/http"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// AccountEvents returns where alerts go and the newest account events.
func (c *Client) AccountEvents(ctx context.Context) (apiv1.AccountEvents, error) {
	var out apiv1.AccountEvents
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/wallet/events"}, &out)
	return out, err
}

// SetWebhook sets where runway alerts are posted ("" clears it).
func (c *Client) SetWebhook(ctx context.Context, url string) (apiv1.AccountEvents, error) {
	var out apiv1.AccountEvents
	err := c.do(ctx, request{method: http.MethodPut, path: "/api/v1/wallet/webhook", body: apiv1.SetWebhookRequest{URL: url}}, &out)
	return out, err
}
