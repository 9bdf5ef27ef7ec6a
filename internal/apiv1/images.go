package apiv1

import "time"

// BaseImage is one image of the operator's base image catalog. Rent it by
// Name (RentRequest.Image); it resolves to Ref.
type BaseImage struct {
	Name        string            `json:"name"`
	Ref         string            `json:"ref"`
	Description string            `json:"description,omitempty"`
	Framework   string            `json:"framework,omitempty"`
	Versions    map[string]string `json:"versions,omitempty"` // pytorch, tensorflow, jax, cuda, cudnn, python...
	// MinCUDA is the CUDA version the host's driver must support.
	MinCUDA string `json:"min_cuda,omitempty"`
	// GPUTypes are the GPU types it suits (none: every type).
	GPUTypes  []string  `json:"gpu_types,omitempty"`
	SizeBytes int64     `json:"size_bytes"` // unpacked; 0: not known
	Prepull   bool      `json:"prepull"`    // agents hold it ahead of any rent
	UpdatedAt time.Time `json:"updated_at"`
}

// BaseImageList is the catalog, by name.
type BaseImageList struct {
	Images []BaseImage `json:"images"`
}

// PutBaseImageRequest adds a catalog entry or replaces the one of the
// path's name (operators only).
type PutBaseImageRequest struct {
	Ref         string            `json:"ref"`
	Description string            `json:"description,omitempty"`
	Framework   string            `json:"framework,omitempty"`
	Versions    map[string]string `json:"versions,omitempty"`
	MinCUDA     string            `json:"min_cuda,omitempty"`
	GPUTypes    []string          `json:"gpu_types,omitempty"`
	SizeBytes   int64             `json:"size_bytes,omitempty"`
	Prepull     bool              `json:"prepull,omitempty"`
}

// SetPrepullRequest marks a catalog entry to pre-pull, or not.
type SetPrepullRequest struct {
	Prepull bool `json:"prepull"`
}
