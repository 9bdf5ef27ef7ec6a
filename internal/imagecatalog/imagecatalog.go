// Package imagecatalog keeps the operator's base image catalog: curated
// images in the operator's registry (PyTorch, TensorFlow, JAX, CUDA...)
// that customers list (`gpurent images`, GET /api/v1/images, the rent
// form's picker) and rent by name (`gpurent rent --image pytorch:2.5`).
// Operators add, remove and mark images to pre-pull; agents pull those
// ahead of any rent.
package imagecatalog

import (
	"context"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/imageref"
)

// Store is what the service reads and writes: the catalog, and, read
// only, the GPU types an image may say it suits.
type Store interface {
	gpurent.ImageStore
	GPUType(ctx context.Context, id string) (*gpurent.GPUType, error)
}

// Agents hear that the images to pre-pull changed, so that each agent gets
// a new desired state (internal/rental bumps every host).
type Agents interface {
	PrepullChanged(ctx context.Context) error
}

// Config configures the service.
type Config struct {
	Store  Store
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil: discard
	// Images is the operator's policy: a catalog image must pass it (the
	// operator's registry is on it when there is one).
	Images *imageref.Policy
	// Agents, when set, hears of changes to what is pre-pulled.
	Agents Agents
	// MaxImageBytes, when positive, is the largest size a catalog entry
	// may state (serve --max-image-gib; agents enforce their own
	// --max-image-gib when they pull).
	MaxImageBytes int64
}

// Service keeps the catalog. It is safe for concurrent use.
type Service struct{ cfg Config }

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg}
}

// Limits of a catalog entry.
const (
	MaxDescription = 500
	MaxVersions    = 16
	MaxGPUTypes    = 32
	// MaxSizeBytes is the largest size an entry may state (1 TiB).
	MaxSizeBytes = 1 << 40
)

var (
	// A catalog name: a lower-case repository-like name and an optional
	// tag, as customers type it after --image.
	nameRE    = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?(?::[A-Za-z0-9_][A-Za-z0-9._-]{0,63})?$`)
	keyRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)
	versionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_-]{0,31}$`)
	cudaRE    = regexp.MustCompile(`^[0-9]{1,2}\.[0-9]{1,2}$`)
)

// ValidName reports whether name is a valid catalog name.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// List answers the catalog by name; any signed-in account may read it.
func (s *Service) List(ctx context.Context, acc *gpurent.Account) ([]gpurent.BaseImage, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	return s.cfg.Store.ListBaseImages(ctx)
}

// Put adds img to the catalog, or replaces the entry of its name. Only an
// operator may.
func (s *Service) Put(ctx context.Context, acc *gpurent.Account, img gpurent.BaseImage) (*gpurent.BaseImage, error) {
	if err := operator(acc); err != nil {
		return nil, err
	}
	if err := s.check(ctx, &img); err != nil {
		return nil, err
	}
	prev, err := s.cfg.Store.BaseImage(ctx, img.Name)
	if err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, err
	}
	img.UpdatedAt = s.cfg.Now()
	if err := s.cfg.Store.PutBaseImage(ctx, &img); err != nil {
		return nil, err
	}
	s.cfg.Logger.Info("base image put", "name", img.Name, "ref", img.Ref, "prepull", img.Prepull, "by", acc.ID)
	if img.Prepull || (prev != nil && prev.Prepull) {
		s.changed(ctx)
	}
	return &img, nil
}

// Remove deletes the entry named name. Only an operator may; instances
// rented with it keep their image reference.
func (s *Service) Remove(ctx context.Context, acc *gpurent.Account, name string) error {
	if err := operator(acc); err != nil {
		return err
	}
	prev, err := s.cfg.Store.BaseImage(ctx, name)
	if err != nil {
		return err
	}
	if err := s.cfg.Store.DeleteBaseImage(ctx, name); err != nil {
		return err
	}
	s.cfg.Logger.Info("base image removed", "name", name, "by", acc.ID)
	if prev.Prepull {
		s.changed(ctx)
	}
	return nil
}

// SetPrepull marks the entry named name to be pulled by every agent ahead
// of any rent (or not). Only an operator may.
func (s *Service) SetPrepull(ctx context.Context, acc *gpurent.Account, name string, prepull bool) (*gpurent.BaseImage, error) {
	if err := operator(acc); err != nil {
		return nil, err
	}
	if err := s.cfg.Store.SetBaseImagePrepull(ctx, name, prepull, s.cfg.Now()); err != nil {
		return nil, err
	}
	s.changed(ctx)
	return s.cfg.Store.BaseImage(ctx, name)
}

// Resolve answers the catalog entry a rent's image names, nil when image
// is not a catalog name (it is then an image reference of its own).
func (s *Service) Resolve(ctx context.Context, image string) (*gpurent.BaseImage, error) {
	image = strings.TrimSpace(image)
	if !ValidName(image) {
		return nil, nil
	}
	img, err := s.cfg.Store.BaseImage(ctx, image)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, nil
	}
	return img, err
}

// Prepulled answers the references agents should hold ahead, sorted.
func (s *Service) Prepulled(ctx context.Context) ([]string, error) {
	all, err := s.cfg.Store.ListBaseImages(ctx)
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

// Suits refuses a rent of gpuType with img when img names the types it
// suits and gpuType is not one of them.
func Suits(img *gpurent.BaseImage, gpuType string) error {
	if img == nil || len(img.GPUTypes) == 0 || slices.Contains(img.GPUTypes, gpuType) {
		return nil
	}
	return gpurent.Errorf(gpurent.CodeInvalid, "base image %s suits GPU types %s only, not %s: pick another image (see `gpurent images`) or GPU type",
		img.Name, strings.Join(img.GPUTypes, ", "), gpuType)
}

func (s *Service) changed(ctx context.Context) {
	if s.cfg.Agents == nil {
		return
	}
	if err := s.cfg.Agents.PrepullChanged(ctx); err != nil {
		// The agents catch up with their next desired state anyway.
		s.cfg.Logger.Warn("could not tell the agents that the images to pre-pull changed", "err", err)
	}
}

func operator(acc *gpurent.Account) error {
	if acc == nil {
		return gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	if acc.Role != gpurent.RoleOperator {
		return gpurent.Errorf(gpurent.CodeForbidden, "only an operator may change the base image catalog")
	}
	return nil
}

// check validates and normalises an entry.
func (s *Service) check(ctx context.Context, img *gpurent.BaseImage) error {
	img.Name = strings.TrimSpace(img.Name)
	img.Ref = strings.TrimSpace(img.Ref)
	img.Description = strings.TrimSpace(img.Description)
	img.Framework = strings.ToLower(strings.TrimSpace(img.Framework))
	img.MinCUDA = strings.TrimSpace(img.MinCUDA)
	switch {
	case !ValidName(img.Name):
		return gpurent.Errorf(gpurent.CodeInvalid, "base image name %q: use lower-case letters, digits, '.', '_' or '-' (up to 64), then optionally ':' and a tag, like pytorch:2.5-cuda12.4", img.Name)
	case img.Ref == "":
		return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: the image reference in the registry is required", img.Name)
	case len(img.Ref) > 255:
		return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: the image reference is over 255 characters", img.Name)
	case !utf8.ValidString(img.Description) || len([]rune(img.Description)) > MaxDescription ||
		strings.IndexFunc(img.Description, unicode.IsControl) >= 0:
		return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: the description must be at most %d characters of text on one line", img.Name, MaxDescription)
	case img.Framework != "" && !keyRE.MatchString(img.Framework):
		return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: the framework must be a short lower-case name like pytorch", img.Name)
	case img.MinCUDA != "" && !cudaRE.MatchString(img.MinCUDA):
		return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: min CUDA must be a version like 12.4", img.Name)
	case img.SizeBytes < 0 || img.SizeBytes > MaxSizeBytes:
		return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: the size must be 0 (unknown) to 1 TiB", img.Name)
	case len(img.Versions) > MaxVersions:
		return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: at most %d versions", img.Name, MaxVersions)
	case len(img.GPUTypes) > MaxGPUTypes:
		return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: at most %d GPU types", img.Name, MaxGPUTypes)
	}
	if s.cfg.MaxImageBytes > 0 && img.SizeBytes > s.cfg.MaxImageBytes {
		return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: %.1f GiB is over this operator's image size limit of %.1f GiB",
			img.Name, float64(img.SizeBytes)/(1<<30), float64(s.cfg.MaxImageBytes)/(1<<30))
	}
	if err := s.cfg.Images.Check(img.Ref); err != nil {
		return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: %s", img.Name, gpurent.ErrorMessage(err))
	}
	versions := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(img.Versions)) {
		v := strings.TrimSpace(img.Versions[k])
		lk := strings.ToLower(strings.TrimSpace(k))
		if !keyRE.MatchString(lk) || !versionRE.MatchString(v) {
			return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: version %q=%q: name a library in lower case (pytorch, cuda, python) and a version like 2.5.1", img.Name, k, v)
		}
		versions[lk] = v
	}
	img.Versions = versions
	if len(versions) == 0 {
		img.Versions = nil
	}
	var types []string
	for _, g := range img.GPUTypes {
		g = strings.TrimSpace(g)
		if _, err := s.cfg.Store.GPUType(ctx, g); gpurent.IsCode(err, gpurent.CodeNotFound) {
			return gpurent.Errorf(gpurent.CodeInvalid, "base image %s: unknown GPU type %q (see `gpurent gpus`)", img.Name, g)
		} else if err != nil {
			return err
		}
		types = append(types, g)
	}
	slices.Sort(types)
	img.GPUTypes = slices.Compact(types)
	return nil
}
