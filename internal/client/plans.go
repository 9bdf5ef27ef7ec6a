package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// PlanHistory returns an instance's plan and its changes.
func (c *Client) PlanHistory(ctx context.Context, id string) (apiv1.PlanHistory, error) {
	var out apiv1.PlanHistory
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/instances/" + url.PathEscape(id) + "/plan"}, &out)
	return out, err
}

// ChangePlan converts an instance to another billing plan; a conversion to
// a package charges its first period, so retries carry one idempotency key
// ("" makes one).
func (c *Client) ChangePlan(ctx context.Context, id, plan, idempotencyKey string) (apiv1.ChangePlanResult, error) {
	var out apiv1.ChangePlanResult
	err := c.postIdempotent(ctx, "/api/v1/instances/"+url.PathEscape(id)+"/plan", apiv1.ChangePlanRequest{Plan: plan}, idempotencyKey, &out)
	return out, err
}
