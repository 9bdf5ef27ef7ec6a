package operator

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/rating"
)

// This file serves the overview (/ops) and the fleet (/ops/fleet): zones,
// hosts and their GPUs with health, certification and utilization, the
// host and GPU actions, and the agent join command for a new host.

// Bounds of the free text of the GPU actions (the API's).
const opsMaxReasonRunes = 500

// opsCount is one line of a breakdown: a state, its label and how many.
type opsCount struct {
	Key, Label, Class string
	N                 int
}

// opsCounts turns counts by state into lines in the order of keys, then
// any other state seen, by name.
func opsCounts(p *web.Page, group string, n map[string]int, keys ...string) []opsCount {
	var out []opsCount
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k] = true
		out = append(out, opsCount{Key: k, Label: opsLabel(p, group, k), Class: opsBadge(k), N: n[k]})
	}
	var rest []string
	for k := range n {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, opsCount{Key: k, Label: opsLabel(p, group, k), Class: opsBadge(k), N: n[k]})
	}
	return out
}

// opsOverviewData is the overview page.
type opsOverviewData struct {
	Tabs                          []opsTab
	HostsTotal, HostsOnline       int
	HostStates                    []opsCount
	GPUsTotal, GPUsAllocated      int
	AllocatedPct                  string
	GPUHealth                     []opsCount
	CertStates                    []opsCount
	HasCerts                      bool
	UtilAvg                       string // mean GPU utilization of the sampled GPUs, "" when none
	Sampled                       int
	OpenIncidents                 []opsIncidentRow
	HasIncidents, HasAcademic     bool
	PendingAcademic               int
	HasRevenue                    bool
	RevenueTodayFen, RevenueMonth int64
}

func (s *Pages) opsOverview(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.overview.title")
	ctx, acc := p.Context(), p.Account
	d := opsOverviewData{Tabs: s.opsTabs(p, "overview")}
	if s.cfg.Fleet != nil {
		hosts, err := s.cfg.Fleet.Hosts(ctx, acc)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		states, health := map[string]int{}, map[string]int{}
		for i := range hosts {
			h := &hosts[i]
			states[string(h.State)]++
			if s.cfg.Fleet.Online(h) {
				d.HostsOnline++
			}
			for _, g := range h.GPUs {
				d.GPUsTotal++
				health[string(g.Health)]++
				if g.InstanceID != "" {
					d.GPUsAllocated++
				}
			}
		}
		d.HostsTotal = len(hosts)
		d.HostStates = opsCounts(p, "host", states, string(gpurent.HostReady), string(gpurent.HostCordoned),
			string(gpurent.HostDraining), string(gpurent.HostDown))
		d.GPUHealth = opsCounts(p, "health", health, string(gpurent.GPUHealthy), string(gpurent.GPUDegraded),
			string(gpurent.GPUCordoned), string(gpurent.GPUFailed))
		d.AllocatedPct = opsPercent(d.GPUsAllocated, d.GPUsTotal)
	}
	if s.cfg.Certification != nil {
		certs, err := s.cfg.Certification.Certs(ctx, acc)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		n := map[string]int{}
		for _, c := range certs {
			n[c.State]++
		}
		d.HasCerts = true
		d.CertStates = opsCounts(p, "cert", n, string(gpurent.CertPassed), string(gpurent.CertWarn),
			string(gpurent.CertNone), string(gpurent.CertPending), string(gpurent.CertDegraded), string(gpurent.CertDelisted))
	}
	if s.cfg.Incidents != nil {
		hs, err := s.cfg.Incidents.FleetHealth(ctx, acc)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		sum := 0
		for _, h := range hs {
			if h.Sample != nil {
				d.Sampled++
				sum += h.Sample.UtilPercent
			}
		}
		if d.Sampled > 0 {
			d.UtilAvg = strconv.Itoa((sum+d.Sampled/2)/d.Sampled) + "%"
		}
		all, err := s.cfg.Incidents.AccountIncidents(ctx, acc)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		d.HasIncidents = true
		now := s.opsNow()
		for i := range all {
			if all[i].Incident.State == gpurent.IncidentOpen {
				d.OpenIncidents = append(d.OpenIncidents, opsIncidentRowOf(p, &all[i].Incident, now))
			}
		}
	}
	if s.cfg.Academic != nil {
		pending, err := s.cfg.Academic.List(ctx, acc, true, gpurent.AcademicPending)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		d.HasAcademic, d.PendingAcademic = true, len(pending)
	}
	if s.cfg.Metering != nil {
		loc, err := rating.LoadBillingZone()
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		now := s.opsNow().In(loc)
		today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
		month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, loc)
		rev, err := s.cfg.Metering.Revenue(ctx, month, month.AddDate(0, 1, 0), loc)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		d.HasRevenue, d.RevenueMonth = true, rev.TotalFen
		for _, day := range rev.Days {
			if day.Day == today.Format(time.DateOnly) {
				d.RevenueTodayFen = day.TotalFen
			}
		}
	}
	s.site.Render(w, r, p, "ops", d)
}

// opsPercent is part of whole as a percentage with one decimal, in
// integer arithmetic ("-" for an empty whole).
func opsPercent(part, whole int) string {
	if whole <= 0 {
		return "-"
	}
	tenths := (part*1000 + whole/2) / whole
	return strconv.Itoa(tenths/10) + "." + strconv.Itoa(tenths%10) + "%"
}

// opsHostsPerPage bounds the hosts one fleet page lists.
const opsHostsPerPage = 100

// opsFleetData is the fleet page: zones, the hosts (filtered, a page at a
// time) and the join commands.
type opsFleetData struct {
	Tabs  []opsTab
	Zones []opsZoneRow
	Hosts []opsHostRow
	Join  []opsJoinRow
	// The filter, the states it offers, and the page.
	Zone, State, Query string
	States             []opsCount
	Matched            int
	Page, Pages        int
	PrevURL, NextURL   string
}

type opsZoneRow struct {
	ID, Name, Region      string
	Hosts, GPUs, FreeGPUs int
	// ProbeURL is the zone's latency probe ("" the control plane's);
	// ProbeValue what its form shows (what was typed, after a refusal).
	ProbeURL, ProbeValue string
}

type opsHostRow struct {
	ID, Name, Zone, Runtime  string
	State, StateLabel, Class string
	Online                   bool
	LastSeen                 *time.Time
	Free, Total, Allocated   int
	// Unhealthy are the GPUs by health other than healthy.
	Unhealthy              []opsCount
	CanCordon, CanUncordon bool
	CanDrain               bool
	GPUs                   []opsGPURow
}

type opsGPURow struct {
	UUID, Type, Host                   string
	Index                              int
	Health, HealthLabel, HealthClass   string
	Reason                             string
	Cert, CertLabel, CertClass, CertOf string
	Util, Mem                          string
	Holder, BenchJob                   string
	RMA, CanRepair                     bool
}

type opsJoinRow struct {
	Zone, Name, Command string
}

// opsHostData is one host's page: its GPUs with health, certification and
// the latest sample, and the GPU actions.
type opsHostData struct {
	Tabs     []opsTab
	Host     opsHostRow
	HasCerts bool
	HasUtil  bool
	// GPUError is the GPU whose form failed, Reason what was typed.
	GPUError, Reason string
}

func (s *Pages) opsFleet(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsFleetPage(w, r, p, http.StatusOK, "", "")
}

// opsZoneProbe sets or clears a zone's latency probe, as the API's
// PUT /api/v1/zones/{id}/probe does; a refused URL shows the fleet page
// again with the message and what was typed.
func (s *Pages) opsZoneProbe(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.fleet.title")
	id, value := r.PathValue("id"), strings.TrimSpace(r.PostFormValue("probe_url"))
	_, err := s.cfg.Fleet.SetZoneProbe(p.Context(), p.Account, id, value)
	again := func(string) { s.opsFleetPage(w, r, p, http.StatusBadRequest, id, value) }
	if s.opsRefused(w, r, p, err, again) {
		return
	}
	ok := "zone_probe"
	if value == "" {
		ok = "zone_probe_cleared"
	}
	opsDone(w, r, "/ops/fleet", nil, ok, "zone-"+id)
}

// opsFleetPage renders the fleet page with the status given; formZone and
// formValue are a refused probe form's zone and text.
func (s *Pages) opsFleetPage(w http.ResponseWriter, r *http.Request, p *web.Page, status int, formZone, formValue string) {
	s.opsPage(p, r, "ops.fleet.title")
	ctx := p.Context()
	q := r.URL.Query()
	d := opsFleetData{Tabs: s.opsTabs(p, "fleet"), Zone: q.Get("zone"), State: q.Get("state")}
	d.Query, _ = opsOneLine(q.Get("q"), 200, false)
	zones, err := s.cfg.Fleet.Zones(ctx)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	hosts, err := s.cfg.Fleet.Hosts(ctx, p.Account)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	zoneAt := map[string]int{} // zone id → index in d.Zones
	for _, z := range zones {
		zoneAt[z.ID] = len(d.Zones)
		row := opsZoneRow{ID: z.ID, Name: z.Name, Region: z.Region, ProbeURL: z.ProbeURL, ProbeValue: z.ProbeURL}
		if z.ID == formZone {
			row.ProbeValue = formValue
		}
		d.Zones = append(d.Zones, row)
	}
	states := map[string]int{}
	var matched []opsHostRow
	needle := strings.ToLower(d.Query)
	for i := range hosts {
		h := &hosts[i]
		row := s.opsHostRow(p, h)
		zi, ok := zoneAt[h.ZoneID]
		if !ok { // a zone the catalog lacks: still counted
			zi = len(d.Zones)
			zoneAt[h.ZoneID] = zi
			d.Zones = append(d.Zones, opsZoneRow{ID: h.ZoneID})
		}
		z := &d.Zones[zi]
		z.Hosts++
		z.GPUs += row.Total
		if h.State == gpurent.HostReady {
			z.FreeGPUs += row.Free
		}
		states[row.State]++
		if (d.Zone == "" || d.Zone == h.ZoneID) && (d.State == "" || d.State == row.State) &&
			(needle == "" || strings.Contains(strings.ToLower(h.Name), needle) || strings.Contains(strings.ToLower(h.ID), needle)) {
			matched = append(matched, row)
		}
	}
	d.States = opsCounts(p, "host", states, string(gpurent.HostReady), string(gpurent.HostCordoned),
		string(gpurent.HostDraining), string(gpurent.HostDown))
	d.Matched = len(matched)
	d.Pages = max(1, (len(matched)+opsHostsPerPage-1)/opsHostsPerPage)
	d.Page = 1
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n >= 1 && n <= d.Pages {
		d.Page = n
	}
	lo := (d.Page - 1) * opsHostsPerPage
	d.Hosts = matched[lo:min(len(matched), lo+opsHostsPerPage)]
	pageURL := func(n int) string {
		v := url.Values{}
		for k, x := range map[string]string{"zone": d.Zone, "state": d.State, "q": d.Query} {
			if x != "" {
				v.Set(k, x)
			}
		}
		v.Set("page", strconv.Itoa(n))
		return "/ops/fleet?" + v.Encode()
	}
	if d.Page > 1 {
		d.PrevURL = pageURL(d.Page - 1)
	}
	if d.Page < d.Pages {
		d.NextURL = pageURL(d.Page + 1)
	}
	for _, z := range d.Zones {
		d.Join = append(d.Join, opsJoinRow{Zone: z.ID, Name: z.Name, Command: s.opsJoinCommand(z.ID)})
	}
	s.site.RenderStatus(w, r, p, status, "ops_fleet", d)
}

// opsHostRow is a host's line: its state, its agent, and its GPUs counted
// (free: healthy, not allocated, not benchmarking).
func (s *Pages) opsHostRow(p *web.Page, h *gpurent.Host) opsHostRow {
	row := opsHostRow{ID: h.ID, Name: h.Name, Zone: h.ZoneID, Runtime: h.Runtime, State: string(h.State),
		StateLabel: opsLabel(p, "host", string(h.State)), Class: opsBadge(string(h.State)),
		Online: s.cfg.Fleet.Online(h), LastSeen: h.LastSeenAt, Total: len(h.GPUs),
		CanCordon:   h.State == gpurent.HostReady,
		CanUncordon: h.State == gpurent.HostCordoned || h.State == gpurent.HostDraining,
		CanDrain:    h.State != gpurent.HostDraining && h.State != gpurent.HostDown && s.cfg.Incidents != nil}
	unhealthy := map[string]int{}
	for _, g := range h.GPUs {
		switch {
		case g.Health != gpurent.GPUHealthy:
			unhealthy[string(g.Health)]++
		case g.InstanceID != "":
			row.Allocated++
		case g.BenchJobID == "":
			row.Free++
		}
	}
	if len(unhealthy) > 0 {
		row.Unhealthy = opsCounts(p, "health", unhealthy)
	}
	return row
}

func (s *Pages) opsHost(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.fleet.title")
	d, err := s.opsHostData(p, r.PathValue("id"))
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	s.site.Render(w, r, p, "ops_host", d)
}

// opsHostData gathers one host's page from the fleet, incident and
// certification services.
func (s *Pages) opsHostData(p *web.Page, id string) (opsHostData, error) {
	ctx, acc := p.Context(), p.Account
	d := opsHostData{Tabs: s.opsTabs(p, "fleet")}
	hosts, err := s.cfg.Fleet.Hosts(ctx, acc)
	if err != nil {
		return d, err
	}
	var host *gpurent.Host
	for i := range hosts {
		if hosts[i].ID == id {
			host = &hosts[i]
		}
	}
	if host == nil {
		return d, gpurent.Errorf(gpurent.CodeNotFound, "host %q not found", id)
	}
	p.Title = host.Name
	health := map[string]*incident.GPUHealth{}
	if s.cfg.Incidents != nil {
		hs, err := s.cfg.Incidents.FleetHealth(ctx, acc)
		if err != nil {
			return d, err
		}
		for i := range hs {
			if hs[i].GPU.HostID == id || hs[i].HostID == id {
				health[hs[i].GPU.ID] = &hs[i]
			}
		}
		d.HasUtil = true
	}
	certs := map[string]apiv1.GPUCert{}
	if s.cfg.Certification != nil {
		list, err := s.cfg.Certification.Certs(ctx, acc)
		if err != nil {
			return d, err
		}
		for _, c := range list {
			certs[c.GPU] = c
		}
		d.HasCerts = true
	}
	d.Host = s.opsHostRow(p, host)
	for _, g := range host.GPUs {
		d.Host.GPUs = append(d.Host.GPUs, opsGPURowOf(p, g, health[g.ID], certs))
	}
	return d, nil
}

// opsJoinTokenFile is where the join section tells operators to put a
// host's join token.
const opsJoinTokenFile = "/etc/gpurent/join-token"

// opsJoinCommand is how an operator joins a new GPU host to this control
// plane in zone: create a one-time join token, then start the agent, which
// reads it from a file. No secret is shown: there is none to share.
func (s *Pages) opsJoinCommand(zone string) string {
	return "gpurent hosts join-token create --zone " + opsShellWord(zone) + "\n" +
		"gpurent agent --server " + opsShellWord(s.cfg.PublicURL) + " --zone " + opsShellWord(zone) +
		" --join-token-file " + opsJoinTokenFile
}

// opsShellWord quotes a word for a POSIX shell when it needs it.
func opsShellWord(w string) string {
	if w == "" {
		return "''"
	}
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=@%+,", c)) {
			return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return w
}

// opsGPURowOf is one GPU's line: health from the store's GPU (and the
// incident service's reason), certification, the latest sample.
func opsGPURowOf(p *web.Page, g gpurent.GPU, h *incident.GPUHealth, certs map[string]apiv1.GPUCert) opsGPURow {
	row := opsGPURow{UUID: g.ID, Type: g.TypeID, Index: g.Index, Health: string(g.Health),
		HealthLabel: opsLabel(p, "health", string(g.Health)), HealthClass: opsBadge(string(g.Health)),
		Reason: g.HealthReason, Holder: g.InstanceID, BenchJob: g.BenchJobID, Util: "-", Mem: "-",
		CanRepair: g.Health != gpurent.GPUHealthy}
	if h != nil {
		if h.Reason != "" {
			row.Reason = h.Reason
		}
		row.RMA = h.RMACandidate
		if sm := h.Sample; sm != nil {
			row.Util = strconv.Itoa(sm.UtilPercent) + "%"
			row.Mem = p.T("ops.fleet.mem_value", opsGiB(sm.MemUsedMiB), opsGiB(g.MemoryMiB))
		}
	}
	if c, ok := certs[g.ID]; ok {
		row.Cert, row.CertLabel, row.CertClass = c.State, opsLabel(p, "cert", c.State), opsBadge(c.State)
		if c.State == string(gpurent.CertDegraded) || c.State == string(gpurent.CertWarn) || c.State == string(gpurent.CertDelisted) {
			row.CertOf = p.T("ops.fleet.cert_ratio", c.RatioPermille/10, c.RatioPermille%10)
		}
	}
	return row
}

// opsGiB shows MiB as GiB with one decimal, in integer arithmetic.
func opsGiB(mib int64) string {
	if mib <= 0 {
		return "0"
	}
	tenths := (mib*10 + 512) / 1024
	return strconv.FormatInt(tenths/10, 10) + "." + strconv.FormatInt(tenths%10, 10)
}

// opsHostAction cordons, uncordons or drains a host, as the API's host
// routes do, and goes back to the fleet (or to the host's page, when the
// form came from there).
func (s *Pages) opsHostAction(w http.ResponseWriter, r *http.Request, p *web.Page) {
	p.Nav = "ops"
	id, action := r.PathValue("id"), r.PathValue("action")
	var err error
	switch action {
	case "cordon":
		_, err = s.cfg.Fleet.SetHostState(p.Context(), p.Account, id, gpurent.HostCordoned)
	case "uncordon":
		_, err = s.cfg.Fleet.SetHostState(p.Context(), p.Account, id, gpurent.HostReady)
	case "drain":
		if s.cfg.Incidents == nil {
			err = gpurent.Errorf(gpurent.CodeUnavailable, "draining needs the incident service")
			break
		}
		_, _, err = s.cfg.Incidents.DrainHost(p.Context(), p.Account, id)
	default:
		s.site.NotFound(w, r, p)
		return
	}
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	if r.PostFormValue("back") == "host" {
		opsDone(w, r, "/ops/fleet/hosts/"+url.PathEscape(id), nil, "host_"+action, "")
		return
	}
	opsDone(w, r, "/ops/fleet", nil, "host_"+action, "host-"+id)
}

// opsGPUAction cordons a GPU (a reason is required) or marks it repaired
// (an optional note), as the API's GPU routes do, and goes back to its
// host's page (the form names the host).
func (s *Pages) opsGPUAction(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.fleet.title")
	uuid, action, hostID := r.PathValue("uuid"), r.PathValue("action"), r.PostFormValue("host")
	if action != "cordon" && action != "repair" {
		s.site.NotFound(w, r, p)
		return
	}
	if s.cfg.Incidents == nil {
		s.site.Fail(w, r, p, gpurent.Errorf(gpurent.CodeUnavailable, "GPU health is not served by this server"))
		return
	}
	field := "reason"
	if action == "repair" {
		field = "note"
	}
	text, problem := opsOneLine(r.PostFormValue(field), opsMaxReasonRunes, action == "cordon")
	again := func(msg string) {
		p.Error = msg
		d, err := s.opsHostData(p, hostID)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		d.GPUError, d.Reason = uuid, r.PostFormValue(field)
		s.site.RenderStatus(w, r, p, http.StatusBadRequest, "ops_host", d)
	}
	if problem != "" {
		again(p.T("ops.err."+problem, p.T("ops.fleet."+field)))
		return
	}
	var err error
	if action == "cordon" {
		_, err = s.cfg.Incidents.CordonGPU(p.Context(), p.Account, uuid, text)
	} else {
		_, err = s.cfg.Incidents.RepairGPU(p.Context(), p.Account, uuid, text)
	}
	if s.opsRefused(w, r, p, err, again) {
		return
	}
	if hostID == "" {
		opsDone(w, r, "/ops/fleet", nil, "gpu_"+action, "")
		return
	}
	opsDone(w, r, "/ops/fleet/hosts/"+url.PathEscape(hostID), nil, "gpu_"+action, "gpu-"+uuid)
}
