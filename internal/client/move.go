package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// instancePath is the path of an instance's sub-resource, e.g.
// "/api/v1/instances/ins-1/upgrade".
func instancePath(id, action string) (string, error) {
	if id == "" {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "an instance id is required")
	}
	return "/api/v1/instances/" + url.PathEscape(id) + action, nil
}

// UpgradePlan says what Upgrade with req would do now, with the price per
// hour before and after and the expected speed.
func (c *Client) UpgradePlan(ctx context.Context, id string, req apiv1.UpgradeRequest) (apiv1.UpgradePlan, error) {
	var out apiv1.UpgradePlan
	path, err := instancePath(id, "/upgrade/plan")
	if err != nil {
		return out, err
	}
	q := url.Values{}
	if req.GPUType != "" {
		q.Set("gpu_type", req.GPUType)
	}
	if req.GPUCount != nil {
		q.Set("gpu_count", strconv.Itoa(*req.GPUCount))
	}
	if req.Zone != "" {
		q.Set("zone", req.Zone)
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	err = c.do(ctx, request{method: http.MethodGet, path: path}, &out)
	return out, err
}

// Upgrade moves an instance to other GPUs. The server accepts it (202)
// and the operation runs on; follow it with Operations. The request carries
// an Idempotency-Key (idempotencyKey, or a random one) and is sent once
// more with it after a network error, so at most one operation is made.
func (c *Client) Upgrade(ctx context.Context, id string, req apiv1.UpgradeRequest, idempotencyKey string) (apiv1.OperationDetail, error) {
	var out apiv1.OperationDetail
	path, err := instancePath(id, "/upgrade")
	if err != nil {
		return out, err
	}
	err = c.postAccepted(ctx, path, req, idempotencyKey, &out)
	return out, err
}

// Migrate moves an instance, same GPU type and count, to another host (in
// req.Zone; req.HostID is for operators). Retried like Upgrade.
func (c *Client) Migrate(ctx context.Context, id string, req apiv1.MigrateRequest, idempotencyKey string) (apiv1.OperationDetail, error) {
	var out apiv1.OperationDetail
	path, err := instancePath(id, "/migrate")
	if err != nil {
		return out, err
	}
	err = c.postAccepted(ctx, path, req, idempotencyKey, &out)
	return out, err
}

// StartInstanceWith starts a stopped instance and, when its host has no
// free GPU, moves it to another host (req.Move) or queues it (req.Queue).
// The answer's Operation is set when a move or queue was made. Retried
// like Upgrade.
func (c *Client) StartInstanceWith(ctx context.Context, id string, req apiv1.StartRequest, idempotencyKey string) (apiv1.StartResult, error) {
	var out apiv1.StartResult
	path, err := instancePath(id, "/start")
	if err != nil {
		return out, err
	}
	err = c.postAccepted(ctx, path, req, idempotencyKey, &out)
	return out, err
}

// Operations lists an instance's operations, newest first.
func (c *Client) Operations(ctx context.Context, id string) (apiv1.OperationList, error) {
	var out apiv1.OperationList
	path, err := instancePath(id, "/operations")
	if err != nil {
		return out, err
	}
	err = c.do(ctx, request{method: http.MethodGet, path: path}, &out)
	return out, err
}

// Operation returns one operation of an instance (from its list).
func (c *Client) Operation(ctx context.Context, instanceID, opID string) (apiv1.Operation, error) {
	list, err := c.Operations(ctx, instanceID)
	if err != nil {
		return apiv1.Operation{}, err
	}
	for _, op := range list.Operations {
		if op.ID == opID {
			return op, nil
		}
	}
	return apiv1.Operation{}, gpurent.Errorf(gpurent.CodeNotFound, "instance %s has no operation %s", instanceID, opID)
}

// CancelQueuedStart cancels an instance's queued start and returns the
// canceled operation.
func (c *Client) CancelQueuedStart(ctx context.Context, id string) (apiv1.Operation, error) {
	var out apiv1.Operation
	path, err := instancePath(id, "/queue")
	if err != nil {
		return out, err
	}
	err = c.do(ctx, request{method: http.MethodDelete, path: path}, &out)
	return out, err
}

// postAccepted sends a POST that starts an operation (answered 202, or 200
// when nothing new was made) with an Idempotency-Key (key, or a random
// one), once more with the same key after a network error.
func (c *Client) postAccepted(ctx context.Context, path string, body any, key string, out any) error {
	return c.postWithKey(ctx, path, body, key, []int{http.StatusAccepted, http.StatusOK}, out)
}
