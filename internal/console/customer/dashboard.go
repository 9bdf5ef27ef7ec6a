package customer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/wallet"
)

// dashboardRow is one instance in the dashboard's list.
type dashboardRow struct {
	ID, Name         string
	GPUs             string
	State            gpurent.InstanceState
	StateText, Badge string
	Zone, Host       string
	Created          time.Time
	Cost             string
	CostMuted        bool
	StateID          string
}

// dashboardAlert is one line of the alerts box; Level is a badge class.
type dashboardAlert struct {
	Text, Level, Link, LinkText string
}

// dashboardData is the dashboard's data.
type dashboardData struct {
	Rows   []dashboardRow
	Wallet *wallet.View
	// WalletText are the wallet's figures by element id, as shown and as
	// the live stream updates them.
	WalletText map[string]string
	Alerts     []dashboardAlert
	Notices    []gpurent.AccountEvent
	// Live is the address of the page's event stream.
	Live string
}

// dashboard is the customer's start page: instances, wallet, alerts.
func (s *Pages) dashboard(w http.ResponseWriter, r *http.Request, p *web.Page) {
	p.Title, p.Nav = p.T("dashboard.title"), "dashboard"
	if k := flashKey("dashboard", r.URL.Query().Get("done")); k != "" {
		p.Flash = p.T(k)
	}
	ctx := p.Context()
	list, err := s.cfg.Rental.List(ctx, p.Account, false)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	d := dashboardData{Live: "/dashboard/events?v=" + instanceSetKey(list)}
	prices := s.newHourPricer(p.Account)
	for i := range list {
		row, err := s.dashboardRow(ctx, p, prices, &list[i])
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		d.Rows = append(d.Rows, row)
	}
	if s.cfg.Wallet != nil {
		v, err := s.cfg.Wallet.Wallet(ctx, p.Account)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		d.Wallet, d.WalletText = v, walletTexts(p, v)
		d.Alerts = append(d.Alerts, walletAlerts(p, v)...)
		evs, _, err := s.cfg.Wallet.Events(ctx, p.Account, 5)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		d.Notices = evs
	}
	if s.cfg.Incidents != nil {
		incs, err := s.cfg.Incidents.AccountIncidents(ctx, p.Account)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		open := 0
		for _, inc := range incs {
			if inc.Incident.State == gpurent.IncidentOpen {
				open++
			}
		}
		if open > 0 {
			d.Alerts = append(d.Alerts, dashboardAlert{Text: p.T("dashboard.alert.incident", open), Level: "warn"})
		}
	}
	s.site.Render(w, r, p, "dashboard", d)
}

// walletTexts are the wallet card's figures by element id: the spendable
// balance, the burn rate per hour and the runway.
func walletTexts(p *web.Page, v *wallet.View) map[string]string {
	runway := p.T("dashboard.runway_none")
	if v.RunwaySeconds != ledger.NoLimit {
		runway = durationText(p, v.RunwaySeconds)
	}
	return map[string]string{"wallet-balance": money.Format(v.SpendableFen),
		"wallet-burn": p.T("instance.per_hour", money.Format(v.BurnFenPerHour)), "wallet-runway": runway}
}

// walletAlerts are the wallet's alerts: arrears, and a runway of two hours
// or less (the wallet's own alert thresholds).
func walletAlerts(p *web.Page, v *wallet.View) []dashboardAlert {
	var out []dashboardAlert
	if v.ArrearsFen > 0 {
		out = append(out, dashboardAlert{Text: p.T("dashboard.alert.arrears", money.Format(v.ArrearsFen)), Level: "bad",
			Link: "/billing", LinkText: p.T("dashboard.topup")})
	}
	if v.RunningInstances > 0 && v.RunwaySeconds != ledger.NoLimit {
		switch {
		case v.RunwaySeconds <= wallet.StopRunwaySeconds:
			out = append(out, dashboardAlert{Text: p.T("dashboard.alert.empty"), Level: "bad", Link: "/billing", LinkText: p.T("dashboard.topup")})
		case v.RunwaySeconds <= 30*60:
			out = append(out, dashboardAlert{Text: p.T("dashboard.alert.runway", durationText(p, v.RunwaySeconds)), Level: "bad",
				Link: "/billing", LinkText: p.T("dashboard.topup")})
		case v.RunwaySeconds <= 2*3600:
			out = append(out, dashboardAlert{Text: p.T("dashboard.alert.runway", durationText(p, v.RunwaySeconds)), Level: "warn",
				Link: "/billing", LinkText: p.T("dashboard.topup")})
		}
	}
	return out
}

// dashboardRow maps one instance.
func (s *Pages) dashboardRow(ctx context.Context, p *web.Page, prices *hourPricer, d *rental.Detail) (dashboardRow, error) {
	in := &d.Instance
	row := dashboardRow{ID: in.ID, Name: in.Name, GPUs: gpusText(p, in.TypeID, in.GPUCount), State: in.State,
		StateText: stateText(p, in.State), Badge: stateBadge(in.State), Zone: in.ZoneID, Created: in.CreatedAt,
		StateID: "state-" + in.ID, Cost: "-"}
	if d.Host != nil {
		row.Host = d.Host.Name
		if row.Zone == "" {
			row.Zone = d.Host.ZoneID
		}
	}
	if row.Name == "" {
		row.Name = in.ID
	}
	switch {
	case in.Plan != "" && in.Plan != gpurent.PlanHourly:
		row.Cost = planText(p, in.Plan) + " · " + p.T("instance.prepaid")
	case in.State == gpurent.StateRunning || in.State == gpurent.StateProvisioning:
		hp, ok, err := prices.price(ctx, in.TypeID, in.GPUCount)
		if err != nil {
			return row, err
		}
		if ok {
			row.Cost = p.T("instance.per_hour", money.Format(hp.fen))
		}
	}
	return row, nil
}

// instanceSetKey identifies the set of instances a page was drawn with:
// the live stream asks for a reload when it changes.
func instanceSetKey(list []rental.Detail) string {
	ids := make([]string, 0, len(list))
	for i := range list {
		ids = append(ids, list[i].Instance.ID)
	}
	slices.Sort(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, ",")))
	return hex.EncodeToString(sum[:8])
}

// hourPrice is what an hour of a shape costs the account from now: the
// academic price when it applies.
type hourPrice struct {
	fen      int64
	academic bool
}

// hourPricer quotes an hour of each shape from one instant, once per
// shape per page, with the billing service (the API's quote).
type hourPricer struct {
	s     *Pages
	acc   *gpurent.Account
	start time.Time
	cache map[shapeKey]hourPrice
}

// shapeKey is a GPU type and count.
type shapeKey struct {
	typeID string
	count  int
}

func (s *Pages) newHourPricer(acc *gpurent.Account) *hourPricer {
	return &hourPricer{s: s, acc: acc, start: s.cfg.Now().UTC().Truncate(time.Second), cache: map[shapeKey]hourPrice{}}
}

// price is an hour of count GPUs of typeID; ok is false when the console
// runs without the billing service.
func (h *hourPricer) price(ctx context.Context, typeID string, count int) (hourPrice, bool, error) {
	if h.s.cfg.Billing == nil {
		return hourPrice{}, false, nil
	}
	key := shapeKey{typeID, count}
	if hp, ok := h.cache[key]; ok {
		return hp, true, nil
	}
	q, err := h.s.cfg.Billing.Quote(ctx, h.acc, pricing.QuoteRequest{TypeID: typeID, Count: count, Start: h.start, Duration: time.Hour})
	if err != nil {
		return hourPrice{}, false, err
	}
	hp := hourPrice{fen: q.List.HourlyFen}
	if q.AcademicApplies {
		hp = hourPrice{fen: q.Academic.HourlyFen, academic: true}
	}
	h.cache[key] = hp
	return hp, true, nil
}
