package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/rental"
)

// This file serves GPU health and incidents: a customer's incidents and
// monthly availability, the failover choice, the operators' fleet health,
// GPU cordon and repair, the RMA list and the demo's fault injection. The
// public SLA terms are in sla.go.

// Bounds of the free text operators send.
const (
	maxGPUUUIDLen  = 128
	maxReasonRunes = 500
	maxFaultDetail = 1000
	maxXid         = 65535
)

// faultKindList names the faults the demo's fake GPUs take, for messages.
const faultKindList = "xid, ecc_dbe, gpu_lost, recovery_action, remap_failure, throttle, slow"

// knownFaultKind says the demo's fake GPUs take faults of kind k
// (incident.Fault).
func knownFaultKind(k string) bool {
	switch k {
	case "xid", "ecc_dbe", "gpu_lost", "recovery_action", "remap_failure", "throttle", "slow":
		return true
	}
	return false
}

// incidentService is the health service, or an unavailable error when the
// server runs without one.
func (s *Server) incidentService() (incident.API, error) {
	if s.incidents == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnavailable, "GPU health and incidents are not served by this server")
	}
	return s.incidents, nil
}

// handleInstanceIncidents answers GET /api/v1/instances/{id}/incidents.
func (s *Server) handleInstanceIncidents(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	svc, err := s.incidentService()
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	rep, err := svc.InstanceReport(r.Context(), acc, r.PathValue("id"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	now := s.now()
	v := apiv1.InstanceIncidents{
		InstanceID:     rep.InstanceID,
		MonthStart:     rep.MonthStart.UTC(),
		AvailabilityBP: rep.AvailabilityBP,
		Availability:   formatBasisPoints(rep.AvailabilityBP),
		CreditsFen:     rep.CreditsFen,
		Incidents:      make([]apiv1.Incident, 0, len(rep.Incidents)),
	}
	for i := range rep.Incidents {
		v.Incidents = append(v.Incidents, incidentDetailView(&rep.Incidents[i], isOperator(acc), now))
	}
	writeJSON(w, http.StatusOK, v)
}

// handleAccountIncidents answers GET /api/v1/incidents.
func (s *Server) handleAccountIncidents(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	svc, err := s.incidentService()
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ds, err := svc.AccountIncidents(r.Context(), acc)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	now := s.now()
	v := apiv1.IncidentList{Incidents: make([]apiv1.Incident, 0, len(ds))}
	for i := range ds {
		v.Incidents = append(v.Incidents, incidentDetailView(&ds[i], isOperator(acc), now))
	}
	writeJSON(w, http.StatusOK, v)
}

// handleSetFailover answers PUT /api/v1/instances/{id}/failover.
func (s *Server) handleSetFailover(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.FailoverRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	policy := gpurent.Failover(strings.ToLower(strings.TrimSpace(req.Policy)))
	if policy != gpurent.FailoverAuto && policy != gpurent.FailoverWait {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeInvalid,
			"policy must be %q (move to healthy GPUs on a platform fault) or %q (stay and be told), got %q",
			gpurent.FailoverAuto, gpurent.FailoverWait, req.Policy))
		return
	}
	d, err := s.rental.SetFailover(r.Context(), acc, r.PathValue("id"), policy)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.FailoverResult{
		Instance: instanceView(d, false),
		Failover: string(rental.FailoverOf(&d.Instance)),
	})
}

// handleFleetHealth answers GET /api/v1/gpus/health (operators).
func (s *Server) handleFleetHealth(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	svc, err := s.incidentService()
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	hs, err := svc.FleetHealth(r.Context(), acc)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, gpuHealthListView(hs, s.now()))
}

// handleRMAList answers GET /api/v1/rma (operators).
func (s *Server) handleRMAList(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	svc, err := s.incidentService()
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	hs, err := svc.RMAList(r.Context(), acc)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, gpuHealthListView(hs, s.now()))
}

// handleCordonGPU answers POST /api/v1/gpus/{uuid}/cordon (operators): the
// GPU takes no new placements; what runs on it stays.
func (s *Server) handleCordonGPU(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	s.gpuAction(w, r, func(body []byte) (string, error) {
		var req apiv1.CordonGPURequest
		if err := decodeJSON(body, &req); err != nil {
			return "", err
		}
		reason, err := operatorText("reason", req.Reason, maxReasonRunes)
		if err == nil && reason == "" {
			err = gpurent.Errorf(gpurent.CodeInvalid, "reason is required: say why the GPU is cordoned")
		}
		return reason, err
	}, func(svc incident.API, uuid, reason string) (*incident.GPUHealth, error) {
		return svc.CordonGPU(r.Context(), acc, uuid, reason)
	})
}

// handleRepairGPU answers POST /api/v1/gpus/{uuid}/repair (operators): the
// GPU was repaired or replaced and is healthy again. The body is optional.
func (s *Server) handleRepairGPU(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	s.gpuAction(w, r, func(body []byte) (string, error) {
		var req apiv1.RepairGPURequest
		if len(body) > 0 {
			if err := decodeJSON(body, &req); err != nil {
				return "", err
			}
		}
		return operatorText("note", req.Note, maxReasonRunes)
	}, func(svc incident.API, uuid, note string) (*incident.GPUHealth, error) {
		return svc.RepairGPU(r.Context(), acc, uuid, note)
	})
}

// gpuAction answers an operator's action on one GPU: the UUID from the
// path, the text (reason or note) the body gives, the action, the GPU's
// health after it.
func (s *Server) gpuAction(w http.ResponseWriter, r *http.Request, text func(body []byte) (string, error),
	act func(svc incident.API, uuid, text string) (*incident.GPUHealth, error)) {
	uuid, err := gpuUUIDParam(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	t, err := text(body)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	svc, err := s.incidentService()
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	h, err := act(svc, uuid, t)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, gpuHealthView(h, s.now()))
}

// handleInjectFault answers POST /api/v1/faults (operators): a fault for a
// demo host's fake GPU, accepted for its agent to act on. The service
// refuses it on a real fleet.
func (s *Server) handleInjectFault(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.Fault
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	f, err := faultOf(req)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	svc, err := s.incidentService()
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if err := svc.InjectFault(r.Context(), acc, f); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, apiv1.Fault{HostID: f.HostID, UUID: f.UUID, Kind: f.Kind, Xid: f.Xid, Detail: f.Detail})
}

// faultOf checks a fault request and maps it: a known kind, an Xid for
// kind xid only (a bare Xid means kind xid), bounded text.
func faultOf(req apiv1.Fault) (incident.Fault, error) {
	f := incident.Fault{
		HostID: strings.TrimSpace(req.HostID),
		UUID:   strings.TrimSpace(req.UUID),
		Kind:   strings.ToLower(strings.TrimSpace(req.Kind)),
		Xid:    req.Xid,
	}
	if f.HostID == "" {
		return f, gpurent.Errorf(gpurent.CodeInvalid, "host_id is required")
	}
	if f.UUID == "" {
		return f, gpurent.Errorf(gpurent.CodeInvalid, "uuid is required: the GPU to fault")
	}
	if err := checkGPUUUID(f.UUID); err != nil {
		return f, err
	}
	if f.Kind == "" && f.Xid != 0 {
		f.Kind = "xid"
	}
	if !knownFaultKind(f.Kind) {
		return f, gpurent.Errorf(gpurent.CodeInvalid, "kind must be one of %s, got %q", faultKindList, req.Kind)
	}
	switch {
	case f.Kind == "xid" && (f.Xid < 1 || f.Xid > maxXid):
		return f, gpurent.Errorf(gpurent.CodeInvalid, "kind xid needs an xid from 1 to %d, got %d", maxXid, f.Xid)
	case f.Kind != "xid" && f.Xid != 0:
		return f, gpurent.Errorf(gpurent.CodeInvalid, "xid goes with kind xid only, not %s", f.Kind)
	}
	detail, err := operatorText("detail", req.Detail, maxFaultDetail)
	if err != nil {
		return f, err
	}
	f.Detail = detail
	return f, nil
}

// gpuUUIDParam is the {uuid} of the path, checked.
func gpuUUIDParam(r *http.Request) (string, error) {
	uuid := r.PathValue("uuid")
	return uuid, checkGPUUUID(uuid)
}

// checkGPUUUID accepts a GPU's UUID as agents report it: printable ASCII
// without spaces, at most maxGPUUUIDLen bytes. Whether it exists is the
// service's answer.
func checkGPUUUID(uuid string) error {
	if uuid == "" || len(uuid) > maxGPUUUIDLen {
		return gpurent.Errorf(gpurent.CodeInvalid, "a GPU UUID has 1 to %d characters", maxGPUUUIDLen)
	}
	for _, c := range []byte(uuid) {
		if c <= ' ' || c >= 0x7f {
			return gpurent.Errorf(gpurent.CodeInvalid, "GPU UUID %q has a character no GPU UUID has", uuid)
		}
	}
	return nil
}

// operatorText trims a free-text field and bounds it: valid UTF-8, no
// control characters, at most maxRunes.
func operatorText(field, v string, maxRunes int) (string, error) {
	v = strings.TrimSpace(v)
	if !utf8.ValidString(v) {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "%s is not valid UTF-8", field)
	}
	if n := utf8.RuneCountInString(v); n > maxRunes {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "%s is %d characters long; the most is %d", field, n, maxRunes)
	}
	for _, c := range v {
		if unicode.IsControl(c) {
			return "", gpurent.Errorf(gpurent.CodeInvalid, "%s must be one line of text without control characters", field)
		}
	}
	return v, nil
}

// isOperator says acc sees the fleet's side of an incident.
func isOperator(acc *gpurent.Account) bool { return acc != nil && acc.Role == gpurent.RoleOperator }

// formatBasisPoints renders basis points as a percentage with two
// decimals, with integer arithmetic: 9995 → "99.95%", 10000 → "100.00%".
func formatBasisPoints(bp int) string {
	sign := ""
	if bp < 0 {
		sign, bp = "-", -bp
	}
	frac := bp % 100
	pad := ""
	if frac < 10 {
		pad = "0"
	}
	return sign + strconv.Itoa(bp/100) + "." + pad + strconv.Itoa(frac) + "%"
}

// incidentView maps an incident. Where it happened in the fleet (host,
// GPU, account) is shown to operators only. now ends an open incident's
// duration.
func incidentView(in *gpurent.Incident, operator bool, now time.Time) apiv1.Incident {
	v := apiv1.Incident{
		ID:          in.ID,
		InstanceID:  in.InstanceID,
		Class:       string(in.Class),
		Attribution: string(in.Attribution),
		Cause:       in.Cause,
		State:       string(in.State),
		StartedAt:   in.StartedAt.UTC(),
		CreditFen:   in.CreditFen,
		Entries:     []apiv1.IncidentEntry{},
	}
	if operator {
		v.HostID, v.GPU, v.AccountID = in.HostID, in.GPUID, in.AccountID
	}
	end := now.UTC()
	if in.EndedAt != nil {
		t := in.EndedAt.UTC()
		v.EndedAt, end = &t, t
	}
	if d := end.Sub(v.StartedAt); d > 0 {
		v.DurationSeconds = int64(d / time.Second)
	}
	return v
}

// incidentDetailView maps an incident with its timeline.
func incidentDetailView(d *incident.Detail, operator bool, now time.Time) apiv1.Incident {
	v := incidentView(&d.Incident, operator, now)
	v.Entries = make([]apiv1.IncidentEntry, 0, len(d.Entries))
	for _, e := range d.Entries {
		v.Entries = append(v.Entries, apiv1.IncidentEntry{At: e.At.UTC(), Kind: e.Kind, Message: e.Message})
	}
	return v
}

// gpuHealthView maps one GPU's health for operators.
func gpuHealthView(h *incident.GPUHealth, now time.Time) apiv1.GPUHealth {
	v := apiv1.GPUHealth{
		HostID:        h.HostID,
		HostName:      h.HostName,
		UUID:          h.GPU.ID,
		Index:         h.GPU.Index,
		Type:          h.GPU.TypeID,
		Health:        string(h.GPU.Health),
		Reason:        h.Reason,
		RMACandidate:  h.RMACandidate,
		Recent:        make([]apiv1.GPUEvent, 0, len(h.Recent)),
		OpenIncidents: make([]apiv1.Incident, 0, len(h.OpenIncidents)),
	}
	if v.HostID == "" {
		v.HostID = h.GPU.HostID
	}
	if v.Reason == "" {
		v.Reason = h.GPU.HealthReason
	}
	for _, e := range h.Recent {
		v.Recent = append(v.Recent, apiv1.GPUEvent{ID: e.ID, At: e.At.UTC(), Kind: e.Kind, Xid: e.Xid, Detail: e.Detail})
	}
	for i := range h.OpenIncidents {
		v.OpenIncidents = append(v.OpenIncidents, incidentView(&h.OpenIncidents[i], true, now))
	}
	if sm := h.Sample; sm != nil {
		v.Sample = &apiv1.GPUSample{
			At:           sm.At.UTC(),
			UtilPercent:  sm.UtilPercent,
			MemUsedMiB:   sm.MemUsedMiB,
			TemperatureC: sm.TemperatureC,
			PowerW:       sm.PowerW,
			ThrottleMask: sm.ThrottleMask,
			ECCSingleBit: sm.ECCSingleBit,
			ECCDoubleBit: sm.ECCDoubleBit,
			XidLast:      sm.XidLast,
		}
	}
	return v
}

func gpuHealthListView(hs []incident.GPUHealth, now time.Time) apiv1.GPUHealthList {
	v := apiv1.GPUHealthList{GPUs: make([]apiv1.GPUHealth, 0, len(hs))}
	for i := range hs {
		v.GPUs = append(v.GPUs, gpuHealthView(&hs[i], now))
	}
	return v
}
