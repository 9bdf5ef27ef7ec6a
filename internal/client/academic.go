package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// ApplyAcademic applies for academic prices.
func (c *Client) ApplyAcademic(ctx context.Context, req apiv1.AcademicApplyRequest) (apiv1.AcademicApplication, error) {
	var out apiv1.AcademicApplication
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/academic/applications", body: req,
		header: http.Header{IdempotencyHeader: {NewIdempotencyKey()}}, want: []int{http.StatusCreated, http.StatusOK}}, &out)
	return out, err
}

// AcademicApplications lists the caller's applications; operators with
// all set see every account's, optionally only those in state.
func (c *Client) AcademicApplications(ctx context.Context, all bool, state string) (apiv1.AcademicApplicationList, error) {
	q := url.Values{}
	if all {
		q.Set("all", "true")
	}
	if state != "" {
		q.Set("state", state)
	}
	path := "/api/v1/academic/applications"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out apiv1.AcademicApplicationList
	err := c.do(ctx, request{method: http.MethodGet, path: path}, &out)
	return out, err
}

// AcademicApplication returns an application with its audit trail.
func (c *Client) AcademicApplication(ctx context.Context, id string) (apiv1.AcademicApplication, error) {
	var out apiv1.AcademicApplication
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/academic/applications/" + url.PathEscape(id)}, &out)
	return out, err
}

// DecideAcademic approves or rejects an application (operators).
func (c *Client) DecideAcademic(ctx context.Context, id string, approve bool, note string) (apiv1.AcademicApplication, error) {
	action := "/reject"
	if approve {
		action = "/approve"
	}
	var out apiv1.AcademicApplication
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/academic/applications/" + url.PathEscape(id) + action,
		body: apiv1.AcademicDecision{Note: note}}, &out)
	return out, err
}
