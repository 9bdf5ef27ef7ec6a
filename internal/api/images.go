package api

import (
	"net/http"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

func baseImageView(img *gpurent.BaseImage) apiv1.BaseImage {
	return apiv1.BaseImage{Name: img.Name, Ref: img.Ref, Description: img.Description, Framework: img.Framework,
		Versions: img.Versions, MinCUDA: img.MinCUDA, GPUTypes: img.GPUTypes, SizeBytes: img.SizeBytes,
		Prepull: img.Prepull, UpdatedAt: img.UpdatedAt}
}

// imagesOff answers the catalog routes of a server built without one.
func (s *Server) imagesOff(w http.ResponseWriter, r *http.Request) bool {
	if s.images != nil {
		return false
	}
	s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeUnavailable, "this server keeps no base image catalog"))
	return true
}

// handleListImages answers GET /api/v1/images.
func (s *Server) handleListImages(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	if s.imagesOff(w, r) {
		return
	}
	l, err := s.images.List(r.Context(), acc)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := apiv1.BaseImageList{Images: make([]apiv1.BaseImage, 0, len(l))}
	for i := range l {
		out.Images = append(out.Images, baseImageView(&l[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

// handlePutImage answers PUT /api/v1/images/{name} (operators).
func (s *Server) handlePutImage(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	if s.imagesOff(w, r) {
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.PutBaseImageRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	img, err := s.images.Put(r.Context(), acc, gpurent.BaseImage{Name: r.PathValue("name"), Ref: req.Ref,
		Description: req.Description, Framework: req.Framework, Versions: req.Versions, MinCUDA: req.MinCUDA,
		GPUTypes: req.GPUTypes, SizeBytes: req.SizeBytes, Prepull: req.Prepull})
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, baseImageView(img))
}

// handleDeleteImage answers DELETE /api/v1/images/{name} (operators).
func (s *Server) handleDeleteImage(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	if s.imagesOff(w, r) {
		return
	}
	if err := s.images.Remove(r.Context(), acc, r.PathValue("name")); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleSetPrepull answers PUT /api/v1/images/{name}/prepull (operators).
func (s *Server) handleSetPrepull(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	if s.imagesOff(w, r) {
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.SetPrepullRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	img, err := s.images.SetPrepull(r.Context(), acc, r.PathValue("name"), req.Prepull)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, baseImageView(img))
}
