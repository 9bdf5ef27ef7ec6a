package operator

import (
	"net/http"
	"sort"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
)

// This file serves /ops/incidents: open and recent incidents, the SLA
// credits they posted, and the RMA list, from the incident service.

// opsRecentIncidents bounds the resolved incidents listed.
const opsRecentIncidents = 100

// opsIncidentRow is one incident as operators see it.
type opsIncidentRow struct {
	ID, Class, Attribution, Cause string
	Host, GPU, Instance, Account  string
	State, StateLabel, StateClass string
	Started                       time.Time
	Ended                         *time.Time
	Duration                      string
	CreditFen                     int64
}

// opsIncidentRowOf is an incident's row, in the page's language.
func opsIncidentRowOf(p *web.Page, in *gpurent.Incident, now time.Time) opsIncidentRow {
	end := now
	if in.EndedAt != nil {
		end = *in.EndedAt
	}
	return opsIncidentRow{ID: in.ID, Class: opsLabel(p, "class", string(in.Class)),
		Attribution: opsLabel(p, "attr", string(in.Attribution)), Cause: in.Cause, Host: in.HostID, GPU: in.GPUID,
		Instance: in.InstanceID, Account: in.AccountID, State: string(in.State),
		StateLabel: opsLabel(p, "incstate", string(in.State)), StateClass: opsBadge(string(in.State)),
		Started: in.StartedAt, Ended: in.EndedAt, Duration: opsDuration(p, end.Sub(in.StartedAt)), CreditFen: in.CreditFen}
}

// opsIncidentsData is the incidents page.
type opsIncidentsData struct {
	Tabs           []opsTab
	Open, Recent   []opsIncidentRow
	Credits        []opsIncidentRow
	CreditTotalFen int64
	RMA            []opsGPURow
}

func (s *Pages) opsIncidents(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.inc.title")
	ctx, acc := p.Context(), p.Account
	all, err := s.cfg.Incidents.AccountIncidents(ctx, acc)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	d := opsIncidentsData{Tabs: s.opsTabs(p, "incidents")}
	now := s.opsNow()
	sort.SliceStable(all, func(i, j int) bool { return all[i].Incident.StartedAt.After(all[j].Incident.StartedAt) })
	for i := range all {
		in := &all[i].Incident
		row := opsIncidentRowOf(p, in, now)
		if in.State == gpurent.IncidentOpen {
			d.Open = append(d.Open, row)
		} else if len(d.Recent) < opsRecentIncidents {
			d.Recent = append(d.Recent, row)
		}
		if in.CreditFen > 0 {
			d.Credits = append(d.Credits, row)
			d.CreditTotalFen += in.CreditFen
		}
	}
	rma, err := s.cfg.Incidents.RMAList(ctx, acc)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	for i := range rma {
		row := opsGPURowOf(p, rma[i].GPU, &rma[i], nil)
		if row.Host = rma[i].HostName; row.Host == "" {
			row.Host = rma[i].HostID
		}
		d.RMA = append(d.RMA, row)
	}
	s.site.Render(w, r, p, "ops_incidents", d)
}
