package incident

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/sla"
)

// InstanceReport is the instance's availability, incidents and credits this
// month. Another account's instance is not found.
func (s *Service) InstanceReport(ctx context.Context, acc *gpurent.Account, instanceID string) (*InstanceReport, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	in, err := s.store.InstanceByID(ctx, instanceID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) || (err == nil && in.AccountID != acc.ID && acc.Role != gpurent.RoleOperator) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "instance %q not found", instanceID)
	} else if err != nil {
		return nil, err
	}
	from, to := sla.Month(s.now(), s.cfg.Location)
	list, err := s.store.ListIncidents(ctx, gpurent.IncidentFilter{InstanceID: in.ID, Since: from})
	if err != nil {
		return nil, err
	}
	var host []gpurent.Incident
	rep := &InstanceReport{InstanceID: in.ID, MonthStart: from}
	for _, inc := range list {
		d, err := s.detail(ctx, inc)
		if err != nil {
			return nil, err
		}
		rep.Incidents = append(rep.Incidents, *d)
		if inc.Attribution == gpurent.AttrHost {
			host = append(host, inc)
			if s.posted(d) {
				rep.CreditsFen += inc.CreditFen
			}
		}
	}
	if now := s.now(); now.Before(to) {
		to = now
	}
	avail, err := s.availability(ctx, in, host, from, to)
	if err != nil {
		return nil, err
	}
	rep.AvailabilityBP = avail.bp
	return rep, nil
}

// posted says whether an incident's credit was posted.
func (s *Service) posted(d *Detail) bool {
	for _, e := range d.Entries {
		if e.Kind == "credit" {
			return true
		}
	}
	return false
}

func (s *Service) detail(ctx context.Context, inc gpurent.Incident) (*Detail, error) {
	entries, err := s.store.ListIncidentEntries(ctx, inc.ID)
	if err != nil {
		return nil, err
	}
	return &Detail{Incident: inc, Entries: entries}, nil
}

// AccountIncidents lists the incidents that touched the account's
// instances (operators: every incident), newest first.
func (s *Service) AccountIncidents(ctx context.Context, acc *gpurent.Account) ([]Detail, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	f := gpurent.IncidentFilter{AccountID: acc.ID}
	if acc.Role == gpurent.RoleOperator {
		f.AccountID = ""
	}
	list, err := s.store.ListIncidents(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]Detail, 0, len(list))
	for _, inc := range list {
		d, err := s.detail(ctx, inc)
		if err != nil {
			return nil, err
		}
		out = append(out, *d)
	}
	return out, nil
}

// FleetHealth is every GPU's health (operators).
func (s *Service) FleetHealth(ctx context.Context, acc *gpurent.Account) ([]GPUHealth, error) {
	if err := requireOperator(acc); err != nil {
		return nil, err
	}
	hosts, err := s.store.ListHosts(ctx)
	if err != nil {
		return nil, err
	}
	open, err := s.store.ListIncidents(ctx, gpurent.IncidentFilter{OpenOnly: true})
	if err != nil {
		return nil, err
	}
	var out []GPUHealth
	for _, h := range hosts {
		for _, g := range h.GPUs {
			gh, err := s.gpuHealth(ctx, &h, g, open)
			if err != nil {
				return nil, err
			}
			out = append(out, *gh)
		}
	}
	return out, nil
}

// gpuHealth describes one GPU.
func (s *Service) gpuHealth(ctx context.Context, h *gpurent.Host, g gpurent.GPU, open []gpurent.Incident) (*GPUHealth, error) {
	recent, err := s.store.ListGPUEvents(ctx, gpurent.GPUEventFilter{GPUID: g.ID, Limit: 10})
	if err != nil {
		return nil, err
	}
	gh := &GPUHealth{HostID: h.ID, HostName: h.Name, GPU: g, Recent: recent}
	for _, inc := range open {
		if inc.GPUID == g.ID {
			gh.OpenIncidents = append(gh.OpenIncidents, inc)
		}
	}
	past, err := s.store.ListIncidents(ctx, gpurent.IncidentFilter{GPUID: g.ID})
	if err != nil {
		return nil, err
	}
	gh.RMACandidate, gh.Reason = rmaCandidate(g, past, s.now())
	s.mu.Lock()
	if x, ok := s.samples[g.ID]; ok {
		sm := x.sample
		gh.Sample = &sm
	}
	s.mu.Unlock()
	return gh, nil
}

// rmaCandidate applies the reference's return rules to a GPU's history.
func rmaCandidate(g gpurent.GPU, past []gpurent.Incident, now time.Time) (bool, string) {
	resets, nodes := 0, 0
	for _, inc := range past {
		switch {
		case inc.Class == gpurent.FaultRMA:
			return true, "an RMA-class fault: " + inc.Cause
		case (inc.Class == gpurent.FaultReset || inc.Class == gpurent.FaultDrainReset) && now.Sub(inc.StartedAt) <= 7*24*time.Hour:
			resets++
		case inc.Class == gpurent.FaultNode && now.Sub(inc.StartedAt) <= 30*24*time.Hour:
			nodes++
		}
	}
	switch {
	case resets >= 2:
		return true, "reset-class faults twice within 7 days"
	case nodes >= 2:
		return true, "node faults twice within 30 days"
	}
	return false, ""
}

// byUUID finds a GPU and its host.
func (s *Service) byUUID(ctx context.Context, uuid string) (*gpurent.Host, *gpurent.GPU, error) {
	uuid = strings.TrimSpace(uuid)
	hosts, err := s.store.ListHosts(ctx)
	if err != nil {
		return nil, nil, err
	}
	for i := range hosts {
		if g := gpuOf(&hosts[i], uuid); g != nil {
			return &hosts[i], g, nil
		}
	}
	return nil, nil, gpurent.Errorf(gpurent.CodeNotFound, "GPU %q not found", uuid)
}

// CordonGPU takes a GPU out of placement (operators); an instance on it
// stays until drained or moved.
func (s *Service) CordonGPU(ctx context.Context, acc *gpurent.Account, uuid, reason string) (*GPUHealth, error) {
	if err := requireOperator(acc); err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" || len(reason) > 500 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "cordoning a GPU needs a reason of at most 500 characters")
	}
	h, g, err := s.byUUID(ctx, uuid)
	if err != nil {
		return nil, err
	}
	if err := s.store.SetGPUHealth(ctx, g.ID, gpurent.GPUCordoned, "operator "+acc.Email+": "+reason); err != nil {
		return nil, err
	}
	if s.cfg.Mover != nil {
		s.cfg.Mover.Invalidate()
	}
	s.log.Info("GPU cordoned", "gpu", g.ID, "host", h.Name, "by", acc.ID, "reason", reason)
	return s.reread(ctx, g.ID)
}

// RepairGPU marks a GPU repaired and healthy again (operators): it takes
// placements again, and incidents waiting for it end.
func (s *Service) RepairGPU(ctx context.Context, acc *gpurent.Account, uuid, note string) (*GPUHealth, error) {
	if err := requireOperator(acc); err != nil {
		return nil, err
	}
	h, g, err := s.byUUID(ctx, uuid)
	if err != nil {
		return nil, err
	}
	reason := "repaired by operator " + acc.Email
	if note = strings.TrimSpace(note); note != "" {
		reason += ": " + truncate(note, 400)
	}
	if s.cfg.Relist != nil && g.Health != gpurent.GPUHealthy {
		held, err := s.cfg.Relist.Relist(ctx, h.ID, g.ID, acc.ID)
		if err != nil {
			return nil, err
		}
		if held {
			reason += "; benchmarked before it is rented again"
		}
	}
	if err := s.store.SetGPUHealth(ctx, g.ID, gpurent.GPUHealthy, reason); err != nil {
		return nil, err
	}
	if h.State == gpurent.HostDraining {
		all := true
		for _, o := range h.GPUs {
			if o.ID != g.ID && o.Health != gpurent.GPUHealthy {
				all = false
			}
		}
		if all {
			if err := s.store.SetHostState(ctx, h.ID, gpurent.HostReady); err != nil {
				return nil, err
			}
		}
	}
	if s.cfg.Mover != nil {
		s.cfg.Mover.Invalidate()
	}
	s.log.Info("GPU repaired", "gpu", g.ID, "host", h.Name, "by", acc.ID)
	return s.reread(ctx, g.ID)
}

func (s *Service) reread(ctx context.Context, uuid string) (*GPUHealth, error) {
	h, g, err := s.byUUID(ctx, uuid)
	if err != nil {
		return nil, err
	}
	open, err := s.store.ListIncidents(ctx, gpurent.IncidentFilter{GPUID: uuid, OpenOnly: true})
	if err != nil {
		return nil, err
	}
	return s.gpuHealth(ctx, h, *g, open)
}

// RMAList lists the GPUs to return to the vendor (operators).
func (s *Service) RMAList(ctx context.Context, acc *gpurent.Account) ([]GPUHealth, error) {
	all, err := s.FleetHealth(ctx, acc)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(g GPUHealth) bool { return !g.RMACandidate }), nil
}

// InjectFault puts a fault into a demo host's fake GPU (operators, demo
// only): the agent then reports it like a real one.
func (s *Service) InjectFault(ctx context.Context, acc *gpurent.Account, f Fault) error {
	if err := requireOperator(acc); err != nil {
		return err
	}
	s.mu.Lock()
	inj := s.cfg.Injector
	s.mu.Unlock()
	if inj == nil {
		return gpurent.Errorf(gpurent.CodeUnavailable, "fault injection is for the demo's fake GPUs; this fleet has real ones")
	}
	if _, _, err := s.byUUID(ctx, f.UUID); err != nil {
		return err
	}
	return inj.Inject(ctx, f)
}

// SetInjector sets where InjectFault puts faults (the demo's agents).
func (s *Service) SetInjector(inj Injector) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.Injector = inj
}

// DrainHost takes a host out of placement for maintenance and moves every
// instance running on it to other hosts (operators). Maintenance is not a
// fault: no incident, no credit.
func (s *Service) DrainHost(ctx context.Context, acc *gpurent.Account, hostID string) (*gpurent.Host, []string, error) {
	if err := requireOperator(acc); err != nil {
		return nil, nil, err
	}
	h, err := s.store.HostByID(ctx, hostID)
	if err != nil {
		return nil, nil, err
	}
	if err := s.store.SetHostState(ctx, h.ID, gpurent.HostDraining); err != nil {
		return nil, nil, err
	}
	if s.cfg.Mover != nil {
		s.cfg.Mover.Invalidate()
	}
	list, err := s.store.ListInstances(ctx, gpurent.InstanceFilter{HostID: h.ID, ActiveOnly: true})
	if err != nil {
		return nil, nil, err
	}
	var moving []string
	for _, in := range list {
		if in.State != gpurent.StateRunning || s.cfg.Mover == nil {
			continue
		}
		op, err := s.cfg.Mover.Failover(ctx, in.ID, true, "host "+h.Name+" drained for maintenance")
		if err != nil {
			s.log.Warn("drain: instance not moved", "host", h.Name, "instance", in.ID, "err", err)
			continue
		}
		if op != nil {
			moving = append(moving, in.ID)
		}
	}
	s.log.Info("host drained", "host", h.Name, "by", acc.ID, "moving", len(moving))
	h, err = s.store.HostByID(ctx, h.ID)
	if err != nil {
		return nil, nil, err
	}
	h.GPUs = nil
	return h, moving, nil
}
