package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// Images lists the operator's base image catalog.
func (c *Client) Images(ctx context.Context) ([]apiv1.BaseImage, error) {
	var out apiv1.BaseImageList
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/images"}, &out)
	return out.Images, err
}

// PutImage adds the catalog entry name, or replaces it (operators).
func (c *Client) PutImage(ctx context.Context, name string, req apiv1.PutBaseImageRequest) (apiv1.BaseImage, error) {
	var out apiv1.BaseImage
	err := c.do(ctx, request{method: http.MethodPut, path: "/api/v1/images/" + url.PathEscape(name), body: req}, &out)
	return out, err
}

// DeleteImage removes the catalog entry name (operators).
func (c *Client) DeleteImage(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/v1/images/" + url.PathEscape(name),
		want: []int{http.StatusNoContent}}, nil)
}

// SetImagePrepull marks the catalog entry name to pre-pull, or not
// (operators).
func (c *Client) SetImagePrepull(ctx context.Context, name string, prepull bool) (apiv1.BaseImage, error) {
	var out apiv1.BaseImage
	err := c.do(ctx, request{method: http.MethodPut, path: "/api/v1/images/" + url.PathEscape(name) + "/prepull",
		body: apiv1.SetPrepullRequest{Prepull: prepull}}, &out)
	return out, err
}
