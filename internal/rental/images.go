package rental

import (
	"context"
	"slices"
	"strings"

	"github.com/gpurent/gpurent"
)

// resolveImage turns a rent's image that names an entry of the operator's
// base image catalog into that entry's reference, refusing a GPU type the
// entry does not suit. A catalog name wins over an image reference of the
// same spelling on Docker Hub: the operator curated it. Any other image
// stays as asked (normalize checks it against the policy).
func (s *Service) resolveImage(ctx context.Context, r *RentRequest) error {
	name := strings.TrimSpace(r.Image)
	if name == "" || len(name) > 128 || strings.Contains(name, "/") {
		return nil // a reference with a path, or nothing a catalog names
	}
	img, err := s.store.BaseImage(ctx, name)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	typ := strings.TrimSpace(r.TypeID)
	if r.Count > 0 && len(img.GPUTypes) > 0 && !slices.Contains(img.GPUTypes, typ) {
		return gpurent.Errorf(gpurent.CodeInvalid, "base image %s suits GPU types %s only, not %s: pick another image (see `gpurent images`) or GPU type",
			img.Name, strings.Join(img.GPUTypes, ", "), typ)
	}
	r.Image = img.Ref
	return nil
}

// prepulled are the references of the catalog's images agents hold ahead.
func (s *Service) prepulled(ctx context.Context) ([]string, error) {
	all, err := s.store.ListBaseImages(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, img := range all {
		if img.Prepull {
			out = append(out, img.Ref)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// PrepullChanged gives every host a new desired state, so that agents pull
// the catalog's images now marked to pre-pull (the image catalog calls it).
func (s *Service) PrepullChanged(ctx context.Context) error {
	hosts, err := s.store.ListHosts(ctx)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		if _, err := s.store.BumpHostGeneration(ctx, h.ID); err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return err
		}
	}
	s.hub.notifyAll()
	return nil
}
