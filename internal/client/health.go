package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/sla"
)

// This file calls the GPU health, incident, failover and SLA routes.

// InstanceIncidents returns an instance's month: availability, the
// incidents that touched it with their timelines, and the credits.
func (c *Client) InstanceIncidents(ctx context.Context, id string) (apiv1.InstanceIncidents, error) {
	var out apiv1.InstanceIncidents
	path, err := instancePath(id, "/incidents")
	if err != nil {
		return out, err
	}
	err = c.do(ctx, request{method: http.MethodGet, path: path}, &out)
	return out, err
}

// Incidents lists the incidents that touched the caller's instances,
// newest first (an operator's: every incident).
func (c *Client) Incidents(ctx context.Context) (apiv1.IncidentList, error) {
	var out apiv1.IncidentList
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/incidents"}, &out)
	return out, err
}

// SetFailover sets what happens to an instance when a platform fault takes
// its GPUs: "auto" (move to healthy GPUs) or "wait" (stay; be told).
func (c *Client) SetFailover(ctx context.Context, id, policy string) (apiv1.FailoverResult, error) {
	var out apiv1.FailoverResult
	path, err := instancePath(id, "/failover")
	if err != nil {
		return out, err
	}
	err = c.do(ctx, request{method: http.MethodPut, path: path, body: apiv1.FailoverRequest{Policy: policy}}, &out)
	return out, err
}

// GPUHealth lists every GPU's health (operators).
func (c *Client) GPUHealth(ctx context.Context) (apiv1.GPUHealthList, error) {
	var out apiv1.GPUHealthList
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/gpus/health"}, &out)
	return out, err
}

// CordonGPU takes a GPU out of placement, saying why (operators).
func (c *Client) CordonGPU(ctx context.Context, uuid, reason string) (apiv1.GPUHealth, error) {
	return c.gpuAction(ctx, uuid, "/cordon", apiv1.CordonGPURequest{Reason: reason})
}

// RepairGPU marks a GPU repaired and healthy again, with an optional note
// (operators).
func (c *Client) RepairGPU(ctx context.Context, uuid, note string) (apiv1.GPUHealth, error) {
	return c.gpuAction(ctx, uuid, "/repair", apiv1.RepairGPURequest{Note: note})
}

func (c *Client) gpuAction(ctx context.Context, uuid, action string, body any) (apiv1.GPUHealth, error) {
	var out apiv1.GPUHealth
	if uuid == "" {
		return out, gpurent.Errorf(gpurent.CodeInvalid, "a GPU UUID is required")
	}
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/gpus/" + url.PathEscape(uuid) + action, body: body}, &out)
	return out, err
}

// RMA lists the GPUs the rules want returned to the vendor (operators).
func (c *Client) RMA(ctx context.Context) (apiv1.GPUHealthList, error) {
	var out apiv1.GPUHealthList
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/rma"}, &out)
	return out, err
}

// InjectFault puts a fault into a demo host's fake GPU (operators; a
// fleet of real GPUs refuses it).
func (c *Client) InjectFault(ctx context.Context, f apiv1.Fault) (apiv1.Fault, error) {
	var out apiv1.Fault
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/faults", body: f,
		want: []int{http.StatusAccepted, http.StatusOK}}, &out)
	return out, err
}

// SLATerms returns the SLA terms the server credits by (public).
func (c *Client) SLATerms(ctx context.Context) (sla.Terms, error) {
	var out sla.Terms
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/sla"}, &out)
	return out, err
}
