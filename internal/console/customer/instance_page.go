package customer

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/money"
)

// sshAccess is how a customer reaches an instance over the SSH gateway.
type sshAccess struct {
	Command     string // ssh -p 2222 i-xxx@gw.example
	SCP         string // scp -P 2222 -r ./data i-xxx@gw.example:/root/data/
	Fingerprint string
}

// sshFor makes the SSH and scp lines for an instance behind the gateway at
// addr ("host:port"); ok is false when addr is not one.
func sshFor(addr, fingerprint, instanceID string) (sshAccess, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return sshAccess{}, false
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		host = "[" + host + "]"
	}
	a := sshAccess{Command: "ssh " + instanceID + "@" + host, SCP: "scp -r ./data " + instanceID + "@" + host + ":" + runtime.DataPath + "/",
		Fingerprint: fingerprint}
	if port != "22" {
		a.Command = "ssh -p " + port + " " + instanceID + "@" + host
		a.SCP = "scp -P " + port + " -r ./data " + instanceID + "@" + host + ":" + runtime.DataPath + "/"
	}
	return a, true
}

// eventRow is one line of the instance's history.
type eventRow struct {
	At            time.Time
	Kind, Message string
}

// typeOption is a GPU type in the upgrade form.
type typeOption struct {
	ID, Label string
	Selected  bool
}

// verifyRun is one verify run with its results.
type verifyRun struct {
	Job     apiv1.BenchJob
	Summary string
}

// instanceData is the instance page's data.
type instanceData struct {
	In        gpurent.Instance
	Name      string
	GPUs      string
	StateText string
	Badge     string
	PlanText  string
	HostName  string
	Zone      string
	CPU       string
	MemGiB    int64
	Price     string
	Academic  bool
	Volume    string
	SSH       *sshAccess
	Running   bool
	CanStop   bool
	CanStart  bool
	CanDelete bool
	CanMove   bool
	Ports     bool
	Events    []eventRow
	// Charts (JSON for console.js's line charts): HasCharts when the
	// instance holds GPUs, Samples how many samples they show.
	HasCharts           bool
	UtilChart, MemChart string
	Samples             int
	Types               []typeOption
	UpCount             string
	Zones               []gpurent.Zone
	Operations          []gpurent.Operation
	Report              *incident.InstanceReport
	ReportLine          string
	Verifies            []verifyRun
	CanVerify           bool
	Live                string
	// PortValue keeps a custom port that was refused.
	PortValue string
	// The startup command: what it is (StartupText), the form's line and
	// choice, and how it stands (StartupStatus, StartupBad when it
	// failed or exited non-zero).
	StartupText, StartupLine, StartupStatus string
	StartupNone, StartupBad                 bool
	// Logs is the logs panel's address (the owner's running instance
	// with the gateway on), "" without the panel.
	Logs string
}

// instancePage shows one instance of the viewer's (operators: any).
func (s *Pages) instancePage(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if k := flashKey("instance", r.URL.Query().Get("done")); k != "" {
		p.Flash = p.T(k)
	}
	s.showInstance(w, r, p, http.StatusOK, nil)
}

// showInstance renders the instance page with status; form keeps what a
// refused form held (nil: defaults).
func (s *Pages) showInstance(w http.ResponseWriter, r *http.Request, p *web.Page, status int, form func(*instanceData)) {
	d, err := s.instanceData(p.Context(), p, r.PathValue("id"))
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	if form != nil {
		form(d)
	}
	p.Title, p.Nav = p.T("instance.title", d.Name), "dashboard"
	if d.Ports && s.cfg.PortsOrigin != "" {
		w.Header().Set("Content-Security-Policy", web.PortFormsPolicy(s.cfg.PortsOrigin))
	}
	s.site.RenderStatus(w, r, p, status, "instance", d)
}

// instanceData gathers the page from the services, as the viewer.
func (s *Pages) instanceData(ctx context.Context, p *web.Page, id string) (*instanceData, error) {
	det, err := s.cfg.Rental.Get(ctx, p.Account, id)
	if err != nil {
		return nil, err
	}
	in := det.Instance
	st := in.State
	d := &instanceData{In: in, Name: in.Name, GPUs: gpusText(p, in.TypeID, in.GPUCount), StateText: stateText(p, st),
		Badge: stateBadge(st), PlanText: planText(p, in.Plan), Zone: in.ZoneID,
		CPU: strconv.FormatFloat(float64(in.CPUMilli)/1000, 'f', -1, 64), MemGiB: in.MemoryMiB / 1024,
		Running:   st == gpurent.StateRunning,
		CanStop:   st == gpurent.StateRunning || st == gpurent.StateProvisioning || st == gpurent.StatePending,
		CanStart:  st == gpurent.StateStopped || st == gpurent.StateFailed,
		CanDelete: in.Active(),
		CanMove:   st == gpurent.StateRunning || st == gpurent.StateStopped,
		Ports:     s.cfg.PortLink != nil,
		UpCount:   strconv.Itoa(in.GPUCount),
		Price:     "-",
	}
	if d.Name == "" {
		d.Name = in.ID
	}
	if det.Host != nil {
		d.HostName = det.Host.Name
		if d.Zone == "" {
			d.Zone = det.Host.ZoneID
		}
	}
	if v := det.Volume; v != nil && v.DeletedAt == nil {
		d.Volume = p.T("instance.volume_text", v.SizeGiB, runtime.DataPath)
	}
	if a, ok := sshFor(s.cfg.SSHAddr, s.cfg.SSHHostKeyFingerprint, in.ID); ok {
		d.SSH = &a
	}
	startupView(p, d)
	if s.cfg.Logs != nil && d.Running && in.AccountID == p.Account.ID {
		d.Logs = "/instances/" + url.PathEscape(in.ID) + "/logs"
		p.Scripts = append(p.Scripts, "logs.js")
	}
	d.Events = eventRows(det.Events)
	d.Live = instanceLive(&in, len(det.Events))
	if in.Plan != "" && in.Plan != gpurent.PlanHourly {
		d.Price = planText(p, in.Plan) + " · " + p.T("instance.prepaid")
	} else if in.Active() {
		hp, ok, err := s.newHourPricer(p.Account).price(ctx, in.TypeID, in.GPUCount)
		if err != nil {
			return nil, err
		}
		if ok {
			d.Price, d.Academic = p.T("instance.per_hour", money.Format(hp.fen)), hp.academic
		}
	}
	if err := s.instanceCharts(ctx, p, d); err != nil {
		return nil, err
	}
	if s.cfg.Fleet != nil && d.CanMove {
		if err := s.moveChoices(ctx, p, d); err != nil {
			return nil, err
		}
	}
	ops, err := s.cfg.Rental.Operations(ctx, p.Account, in.ID)
	if err != nil {
		return nil, err
	}
	if len(ops) > 5 {
		ops = ops[:5]
	}
	d.Operations = ops
	if s.cfg.Incidents != nil {
		rep, err := s.cfg.Incidents.InstanceReport(ctx, p.Account, in.ID)
		if err != nil {
			return nil, err
		}
		d.Report = rep
		d.ReportLine = p.T("instance.availability", permilleText(rep.AvailabilityBP), money.Format(rep.CreditsFen))
	}
	if s.cfg.Certification != nil {
		jobs, err := s.cfg.Certification.Jobs(ctx, p.Account, gpurent.BenchJobFilter{InstanceID: in.ID, Limit: 5})
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			state := j.State
			if key := "instance.verify_state." + j.State; p.Has(key) {
				state = p.T(key)
			}
			d.Verifies = append(d.Verifies, verifyRun{Job: j, Summary: p.T("instance.verify_run", formatWhen(j.CreatedAt), j.Tier, state)})
		}
		d.CanVerify = d.Running && in.GPUCount > 0
	}
	return d, nil
}

// permilleText shows basis points as a percentage with two decimals:
// 9995 → "99.95%".
func permilleText(bp int) string {
	return strconv.Itoa(bp/100) + "." + strconv.Itoa(bp%100/10) + strconv.Itoa(bp%10) + "%"
}

// formatWhen is a time in Beijing time to the minute, as the templates'
// when shows it.
func formatWhen(t time.Time) string { return t.In(web.Location()).Format("2006-01-02 15:04") }

// eventRows are the events newest first.
func eventRows(evs []gpurent.Event) []eventRow {
	out := make([]eventRow, 0, len(evs))
	for i := len(evs) - 1; i >= 0; i-- {
		out = append(out, eventRow{At: evs[i].At, Kind: evs[i].Kind, Message: evs[i].Message})
	}
	return out
}

// instanceLive is the address of the instance page's event stream, with
// what the page was drawn with, so the stream knows when to reload it.
func instanceLive(in *gpurent.Instance, events int) string {
	q := url.Values{"state": {string(in.State)}, "events": {strconv.Itoa(events)}}
	return "/instances/" + url.PathEscape(in.ID) + "/events?" + q.Encode()
}

// moveChoices fills the upgrade form's GPU types (with the free count the
// scheduler sees) and the migrate form's zones, from the fleet service.
func (s *Pages) moveChoices(ctx context.Context, p *web.Page, d *instanceData) error {
	types, err := s.cfg.Fleet.GPUTypes(ctx)
	if err != nil {
		return err
	}
	// What a new placement could get is the scheduler's answer (GPUs
	// under a benchmark job are not free), as the API's GPU list says.
	avail, err := s.cfg.Rental.Availability(ctx)
	if err != nil {
		return err
	}
	for _, a := range types {
		free := 0
		for _, c := range avail[a.Type.ID] {
			free += c.Free
		}
		d.Types = append(d.Types, typeOption{ID: a.Type.ID, Label: p.T("instance.free", a.Type.Name, free),
			Selected: a.Type.ID == d.In.TypeID})
	}
	zones, err := s.cfg.Fleet.Zones(ctx)
	if err != nil {
		return err
	}
	d.Zones = zones
	return nil
}

// instanceCharts fills the utilization and memory charts from the
// incident service's recent samples of the instance's GPUs.
func (s *Pages) instanceCharts(ctx context.Context, p *web.Page, d *instanceData) error {
	src, ok := s.cfg.Incidents.(sampleSource)
	if !ok || len(d.In.GPUIDs) == 0 {
		return nil
	}
	series, err := src.InstanceSamples(ctx, p.Account, d.In.ID)
	if err != nil {
		return err
	}
	util, mem, n := gpuCharts(series)
	d.HasCharts, d.Samples = true, n
	d.UtilChart, d.MemChart = chartJSON(util), chartJSON(mem)
	return nil
}

// sampleSource is the incident service's telemetry history.
type sampleSource interface {
	InstanceSamples(ctx context.Context, acc *gpurent.Account, instanceID string) (map[string]incident.GPUSeries, error)
}

var _ sampleSource = (*incident.Service)(nil)

// chartData is what console.js draws: labels along the x axis and one
// series per GPU.
type chartData struct {
	Labels []string      `json:"labels"`
	Series []chartSeries `json:"series"`
	Max    float64       `json:"max,omitempty"`
	Unit   string        `json:"unit,omitempty"`
}

type chartSeries struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// gpuCharts turns per-GPU samples into a utilization chart (percent) and
// a memory chart (GiB, up to the GPUs' memory), GPUs by index, samples
// aligned on the newest; n is the longest series' length.
func gpuCharts(series map[string]incident.GPUSeries) (util, mem chartData, n int) {
	ids := make([]string, 0, len(series))
	for id, s := range series {
		if len(s.Points) > 0 {
			ids = append(ids, id)
		}
		n = max(n, len(s.Points))
	}
	slices.SortFunc(ids, func(a, b string) int {
		if series[a].Index != series[b].Index {
			return series[a].Index - series[b].Index
		}
		if a < b {
			return -1
		}
		return 1
	})
	util = chartData{Labels: []string{}, Series: []chartSeries{}, Max: 100, Unit: "%"}
	mem = chartData{Labels: []string{}, Series: []chartSeries{}, Unit: " GiB"}
	if n == 0 {
		return util, mem, 0
	}
	loc := web.Location()
	var longest []incident.SamplePoint
	for _, id := range ids {
		if len(series[id].Points) == n {
			longest = series[id].Points
			break
		}
	}
	for _, pt := range longest {
		util.Labels = append(util.Labels, pt.At.In(loc).Format("15:04:05"))
	}
	mem.Labels = util.Labels
	for _, id := range ids {
		s := series[id]
		name := "GPU " + strconv.Itoa(s.Index)
		u := chartSeries{Name: name, Values: make([]float64, n)}
		m := chartSeries{Name: name, Values: make([]float64, n)}
		off := n - len(s.Points) // a shorter series ends with the others
		for i, pt := range s.Points {
			u.Values[off+i] = float64(pt.UtilPercent)
			m.Values[off+i] = float64(pt.MemUsedMiB*10/1024) / 10
		}
		util.Series = append(util.Series, u)
		mem.Series = append(mem.Series, m)
		mem.Max = max(mem.Max, float64(s.MemoryMiB*10/1024)/10)
	}
	return util, mem, n
}
