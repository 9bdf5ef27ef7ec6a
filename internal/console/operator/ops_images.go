package operator

import (
	"fmt"
	"net/http"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
)

// This file serves /ops/images: the base image catalog as operators see
// it (changes go through `gpurent images add|rm|prepull`).

// opsImagesData is the catalog page.
type opsImagesData struct {
	Tabs   []opsTab
	Images []opsImageRow
}

// opsImageRow is one catalog entry with its size as text.
type opsImageRow struct {
	gpurent.BaseImage
	Size string
}

func (s *Pages) opsImages(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.img.title")
	all, err := s.cfg.Images.List(p.Context(), p.Account)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	d := opsImagesData{Tabs: s.opsTabs(p, "images")}
	for _, img := range all {
		size := "-"
		if img.SizeBytes > 0 {
			size = fmt.Sprintf("%.1f GiB", float64(img.SizeBytes)/(1<<30))
		}
		d.Images = append(d.Images, opsImageRow{BaseImage: img, Size: size})
	}
	s.site.Render(w, r, p, "ops_images", d)
}
