package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// SSHKeys lists the account's SSH keys.
func (c *Client) SSHKeys(ctx context.Context) ([]apiv1.SSHKey, error) {
	var out []apiv1.SSHKey
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/ssh-keys"}, &out)
	return out, err
}

// AddSSHKey registers a public key (authorized_keys form).
func (c *Client) AddSSHKey(ctx context.Context, req apiv1.AddSSHKeyRequest) (apiv1.SSHKey, error) {
	var out apiv1.SSHKey
	err := c.postIdempotent(ctx, "/api/v1/ssh-keys", req, "", &out)
	return out, err
}

// DeleteSSHKey removes a key by id or fingerprint.
func (c *Client) DeleteSSHKey(ctx context.Context, idOrFingerprint string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/v1/ssh-keys/" + url.PathEscape(idOrFingerprint),
		want: []int{http.StatusNoContent}}, nil)
}

// InstanceAccess says how to reach an instance over SSH.
func (c *Client) InstanceAccess(ctx context.Context, id string) (apiv1.InstanceAccess, error) {
	var out apiv1.InstanceAccess
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/instances/" + url.PathEscape(id) + "/access"}, &out)
	return out, err
}

// PortLink makes a browser link to an HTTP port of a running instance.
func (c *Client) PortLink(ctx context.Context, id string, port int) (apiv1.PortLink, error) {
	var out apiv1.PortLink
	err := c.do(ctx, request{method: http.MethodPost,
		path: "/api/v1/instances/" + url.PathEscape(id) + "/ports/" + strconv.Itoa(port) + "/link"}, &out)
	return out, err
}

// AccessSessions lists the audit log of the account's sessions (all:
// every account's, for operators).
func (c *Client) AccessSessions(ctx context.Context, all bool, limit int) ([]apiv1.AccessSession, error) {
	q := url.Values{}
	if all {
		q.Set("all", "true")
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/api/v1/access-sessions"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out []apiv1.AccessSession
	err := c.do(ctx, request{method: http.MethodGet, path: path}, &out)
	return out, err
}
