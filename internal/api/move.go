package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rental"
)

// This file serves moving an instance to other GPUs: the upgrade plan with
// its prices, upgrade, migrate, the moved or queued start, the operations
// list and the cancel of a queued start.

// speedBasisSpec labels a speed ratio taken from the datasheet figures.
const speedBasisSpec = "spec"

// handleUpgradePlan answers GET /api/v1/instances/{id}/upgrade/plan
// ?gpu_type=T&gpu_count=N: the plan of the rental service, priced by the
// billing service for the next hour of each shape.
func (s *Server) handleUpgradePlan(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	q := r.URL.Query()
	req := rental.UpgradeRequest{TypeID: strings.TrimSpace(q.Get("gpu_type")), ZoneID: strings.TrimSpace(q.Get("zone"))}
	if v := q.Get("gpu_count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid,
				"gpu_count must be a whole number, 0 (no-GPU mode) or more, got %q", v))
			return
		}
		req.Count = &n
	}
	plan, err := s.rental.PlanUpgrade(r.Context(), acc, r.PathValue("id"), req)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	v, err := s.upgradePlanView(r.Context(), acc, plan)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// upgradePlanView maps a plan and prices both of its shapes: one quote of
// the next hour each, so the numbers are exactly what billing would rate.
func (s *Server) upgradePlanView(ctx context.Context, acc *gpurent.Account, p *rental.UpgradePlan) (apiv1.UpgradePlan, error) {
	// One instant for both quotes, so both price the same hour.
	start := s.now().UTC().Truncate(time.Second)
	from, fromQ, err := s.pricedShape(ctx, acc, p.From, start)
	if err != nil {
		return apiv1.UpgradePlan{}, err
	}
	to, toQ, err := s.pricedShape(ctx, acc, p.To, start)
	if err != nil {
		return apiv1.UpgradePlan{}, err
	}
	v := apiv1.UpgradePlan{
		InstanceID:      p.InstanceID,
		From:            from,
		To:              to,
		SameHost:        p.SameHost,
		HostID:          p.HostID,
		HostName:        p.HostName,
		Available:       p.Available,
		Reason:          p.Reason,
		AcademicApplies: toQ.AcademicApplies,
		PricedAt:        toQ.List.Start.UTC(),
		DifferencePerHour: apiv1.HourPrice{
			ListFen:       to.PricePerHour.ListFen - from.PricePerHour.ListFen,
			AcademicFen:   to.PricePerHour.AcademicFen - from.PricePerHour.AcademicFen,
			ApplicableFen: to.PricePerHour.ApplicableFen - from.PricePerHour.ApplicableFen,
		},
		SpeedBasis: speedBasisSpec,
	}
	if fromQ.AcademicApplies != toQ.AcademicApplies {
		// Both quotes are for one instant and one account.
		return apiv1.UpgradePlan{}, gpurent.Errorf(gpurent.CodeInternal, "the two quotes disagree on academic prices")
	}
	if p.From.BF16TFLOPS > 0 && p.To.BF16TFLOPS > 0 {
		ratio := p.To.BF16TFLOPS / p.From.BF16TFLOPS
		v.SpeedRatio = &ratio
	}
	return v, nil
}

// pricedShape maps a shape with the billing service's quote of one hour
// of it from start.
func (s *Server) pricedShape(ctx context.Context, acc *gpurent.Account, sh rental.Shape, start time.Time) (apiv1.UpgradeShape, *pricing.Quotes, error) {
	q, err := s.billing.Quote(ctx, acc, pricing.QuoteRequest{TypeID: sh.TypeID, Count: sh.Count, Start: start, Duration: time.Hour})
	if err != nil {
		return apiv1.UpgradeShape{}, nil, err
	}
	price := apiv1.HourPrice{ListFen: q.List.HourlyFen, AcademicFen: q.Academic.HourlyFen, ApplicableFen: q.List.HourlyFen}
	if q.AcademicApplies {
		price.ApplicableFen = q.Academic.HourlyFen
	}
	return apiv1.UpgradeShape{
		GPUType:      sh.TypeID,
		GPUCount:     sh.Count,
		CPUMilli:     sh.CPUMilli,
		MemoryMiB:    sh.MemoryMiB,
		BF16TFLOPS:   sh.BF16TFLOPS,
		PricePerHour: price,
	}, q, nil
}

// operationStatus is 202 for an operation this request made, 200 for one
// an earlier request with the same Idempotency-Key made.
func operationStatus(created bool) int {
	if created {
		return http.StatusAccepted
	}
	return http.StatusOK
}

// handleUpgrade answers POST /api/v1/instances/{id}/upgrade.
func (s *Server) handleUpgrade(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		var req apiv1.UpgradeRequest
		if err := decodeJSON(body, &req); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if req.GPUCount != nil && *req.GPUCount < 0 {
			s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid,
				"gpu_count must be 0 (no-GPU mode) or more, got %d", *req.GPUCount))
			return
		}
		d, created, err := s.rental.Upgrade(r.Context(), acc, r.PathValue("id"), rental.UpgradeRequest{
			TypeID:         strings.TrimSpace(req.GPUType),
			Count:          req.GPUCount,
			ZoneID:         strings.TrimSpace(req.Zone),
			IdempotencyKey: r.Header.Get(headerIdempotencyKey),
		})
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		writeJSON(w, operationStatus(created), operationDetailView(d))
	})
}

// handleMigrate answers POST /api/v1/instances/{id}/migrate.
func (s *Server) handleMigrate(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		var req apiv1.MigrateRequest
		if len(body) > 0 { // no body: anywhere
			if err := decodeJSON(body, &req); err != nil {
				s.writeProblem(w, r, err)
				return
			}
		}
		d, created, err := s.rental.Migrate(r.Context(), acc, r.PathValue("id"), rental.MigrateRequest{
			ZoneID:         strings.TrimSpace(req.Zone),
			HostID:         strings.TrimSpace(req.HostID),
			IdempotencyKey: r.Header.Get(headerIdempotencyKey),
		})
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		writeJSON(w, operationStatus(created), operationDetailView(d))
	})
}

// handleStartInstance answers POST /api/v1/instances/{id}/start. Without a
// body (or with neither move nor queue) it is the plain start; with them
// the start moves or queues when the host has no free GPU, and the answer
// carries the operation it made.
func (s *Server) handleStartInstance(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		var req apiv1.StartRequest
		if len(body) > 0 {
			if err := decodeJSON(body, &req); err != nil {
				s.writeProblem(w, r, err)
				return
			}
		}
		id := r.PathValue("id")
		if !req.Move && !req.Queue {
			d, err := s.rental.Start(r.Context(), acc, id)
			if err != nil {
				s.writeProblem(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, apiv1.StartResult{Instance: instanceView(d, false)})
			return
		}
		d, op, err := s.rental.StartWith(r.Context(), acc, id, rental.StartOptions{Move: req.Move, Queue: req.Queue})
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		res := apiv1.StartResult{Instance: instanceView(d, false)}
		status := http.StatusOK
		if op != nil {
			v := operationView(op)
			res.Operation = &v
			status = http.StatusAccepted
		}
		writeJSON(w, status, res)
	})
}

// handleOperations answers GET /api/v1/instances/{id}/operations.
func (s *Server) handleOperations(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	ops, err := s.rental.Operations(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := apiv1.OperationList{Operations: make([]apiv1.Operation, 0, len(ops))}
	for i := range ops {
		out.Operations = append(out.Operations, operationView(&ops[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

// handleCancelQueued answers DELETE /api/v1/instances/{id}/queue: the
// queued start is canceled and answered, finished.
func (s *Server) handleCancelQueued(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	op, err := s.rental.CancelQueued(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, operationView(op))
}

// operationView maps an operation. The Token (the grant between agents),
// the idempotency key and hash and the internal deadline stay inside.
func operationView(o *gpurent.Operation) apiv1.Operation {
	v := apiv1.Operation{
		ID:         o.ID,
		InstanceID: o.InstanceID,
		Kind:       string(o.Kind),
		Step:       string(o.Step),
		From:       apiv1.OperationSource{AllocationID: o.FromAllocationID, HostID: o.FromHostID},
		To: apiv1.OperationTarget{AllocationID: o.ToAllocationID, HostID: o.ToHostID, GPUType: o.ToTypeID,
			GPUCount: o.ToCount, Zone: o.ToZoneID},
		Passes:     o.Passes,
		BytesMoved: o.BytesMoved,
		Message:    o.Message,
		CreatedAt:  o.CreatedAt.UTC(),
		UpdatedAt:  o.UpdatedAt.UTC(),
	}
	if o.FinishedAt != nil {
		t := o.FinishedAt.UTC()
		v.FinishedAt = &t
	}
	return v
}

func operationDetailView(d *rental.OperationDetail) apiv1.OperationDetail {
	return apiv1.OperationDetail{
		Operation: operationView(&d.Operation),
		Instance:  instanceView(&rental.Detail{Instance: d.Instance}, false),
	}
}
