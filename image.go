package gpurent

import "time"

// BaseImage is one image of the operator's base image catalog: an image in
// the operator's registry that customers rent by its catalog name.
type BaseImage struct {
	// Name is the catalog name customers rent by, e.g. "pytorch:2.5-cuda12.4".
	Name string
	// Ref is the image reference it resolves to, in the operator's
	// registry (registry.example.com/base/pytorch:2.5.1-cuda12.4).
	Ref         string
	Description string
	// Framework is the image's main framework ("pytorch", "tensorflow",
	// "jax", "cuda", "base"...).
	Framework string
	// Versions are the versions of what it holds, by lower-case name:
	// "pytorch", "tensorflow", "jax", "cuda", "cudnn", "python"...
	Versions map[string]string
	// MinCUDA is the CUDA version the host's driver must support ("12.4";
	// "" for an image without CUDA).
	MinCUDA string
	// GPUTypes are the GPU type ids it suits (none: every type). A rent of
	// another type with it is refused.
	GPUTypes []string
	// SizeBytes is its size unpacked (0: not known).
	SizeBytes int64
	// Prepull makes every agent pull it ahead of any rent.
	Prepull   bool
	CreatedAt time.Time
	UpdatedAt time.Time
}
