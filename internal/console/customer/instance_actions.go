package customer

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/rental"
)

// portLinkTTL is how long a port link may be opened for the first time
// (the API's port links last as long).
const portLinkTTL = 10 * time.Minute

// maxGPUCount bounds the upgrade form's count (the billing quote's bound).
const maxGPUCount = 8

// instanceURL is the instance page, with a notice key when an action did
// something.
func instanceURL(id, done string) string {
	u := "/instances/" + url.PathEscape(id)
	if done != "" {
		u += "?done=" + done
	}
	return u
}

// actionFailed answers an action the service refused: the instance page
// again with the error above it (not found and the rest: the error page).
func (s *Pages) actionFailed(w http.ResponseWriter, r *http.Request, p *web.Page, err error, form func(*instanceData)) {
	// The codes a customer can act on show the page again with the error;
	// the rest (not found, internal) are the error page.
	status := web.StatusOf(err)
	switch gpurent.ErrorCode(err) {
	case gpurent.CodeInvalid, gpurent.CodeConflict, gpurent.CodePaymentRequired, gpurent.CodeUnavailable:
	default:
		s.site.Fail(w, r, p, err)
		return
	}
	p.FormError(err)
	s.showInstance(w, r, p, status, form)
}

func (s *Pages) stopInstance(w http.ResponseWriter, r *http.Request, p *web.Page) {
	id := r.PathValue("id")
	if _, err := s.cfg.Rental.Stop(p.Context(), p.Account, id); err != nil {
		s.actionFailed(w, r, p, err, nil)
		return
	}
	http.Redirect(w, r, instanceURL(id, "stopped"), http.StatusSeeOther)
}

func (s *Pages) startInstance(w http.ResponseWriter, r *http.Request, p *web.Page) {
	id := r.PathValue("id")
	if _, err := s.cfg.Rental.Start(p.Context(), p.Account, id); err != nil {
		s.actionFailed(w, r, p, err, nil)
		return
	}
	http.Redirect(w, r, instanceURL(id, "started"), http.StatusSeeOther)
}

func (s *Pages) deleteInstance(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if _, err := s.cfg.Rental.Delete(p.Context(), p.Account, r.PathValue("id")); err != nil {
		s.actionFailed(w, r, p, err, nil)
		return
	}
	http.Redirect(w, r, "/dashboard?done=deleted", http.StatusSeeOther)
}

func (s *Pages) migrateInstance(w http.ResponseWriter, r *http.Request, p *web.Page) {
	id := r.PathValue("id")
	zone := strings.TrimSpace(r.PostFormValue("zone"))
	if len(zone) > 100 {
		p.Error = p.T("common.too_long", p.T("instance.zone"), 100)
		s.showInstance(w, r, p, http.StatusBadRequest, nil)
		return
	}
	if _, _, err := s.cfg.Rental.Migrate(p.Context(), p.Account, id, rental.MigrateRequest{ZoneID: zone}); err != nil {
		s.actionFailed(w, r, p, err, nil)
		return
	}
	http.Redirect(w, r, instanceURL(id, "migrate"), http.StatusSeeOther)
}

func (s *Pages) verifyInstance(w http.ResponseWriter, r *http.Request, p *web.Page) {
	id := r.PathValue("id")
	if s.cfg.Certification == nil {
		s.site.NotFound(w, r, p)
		return
	}
	if _, err := s.cfg.Certification.Verify(p.Context(), p.Account, id, ""); err != nil {
		s.actionFailed(w, r, p, err, nil)
		return
	}
	http.Redirect(w, r, instanceURL(id, "verify"), http.StatusSeeOther)
}

// parsePort reads a port field: a number from 1 to 65535.
func parsePort(v string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 65535 {
		return 0, false
	}
	return n, true
}

// openPort makes a browser link to an HTTP port of the instance (the port
// proxy's, as the API's port link) and sends the browser there.
func (s *Pages) openPort(w http.ResponseWriter, r *http.Request, p *web.Page) {
	raw := r.PostFormValue("port")
	keep := func(d *instanceData) { d.PortValue = raw }
	// Ownership first: another customer's instance is not found, whatever
	// the form says.
	d, err := s.cfg.Rental.Get(p.Context(), p.Account, r.PathValue("id"))
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	if s.cfg.PortLink == nil {
		p.Error = p.T("instance.ports_off")
		s.showInstance(w, r, p, http.StatusServiceUnavailable, keep)
		return
	}
	port, ok := parsePort(raw)
	if !ok {
		p.Error = p.T("instance.bad_port")
		s.showInstance(w, r, p, http.StatusBadRequest, keep)
		return
	}
	if d.Instance.State != gpurent.StateRunning {
		p.Error = p.T("instance.not_running")
		s.showInstance(w, r, p, http.StatusConflict, keep)
		return
	}
	http.Redirect(w, r, s.cfg.PortLink(d.Instance.ID, port, d.Instance.AccountID, portLinkTTL), http.StatusSeeOther)
}

// upgradeForm is the upgrade form as the customer filled it.
type upgradeForm struct {
	TypeID   string
	RawCount string
	Count    int
}

// readUpgradeForm checks the form's type and count (0 is no-GPU mode); msg
// is what is wrong, in the page's language.
func readUpgradeForm(p *web.Page, typeID, count string) (upgradeForm, string) {
	f := upgradeForm{TypeID: strings.TrimSpace(typeID), RawCount: strings.TrimSpace(count)}
	if f.TypeID == "" || len(f.TypeID) > 100 {
		return f, p.T("instance.bad_type")
	}
	n, err := strconv.Atoi(f.RawCount)
	switch {
	case f.RawCount == "":
		return f, p.T("common.required", p.T("instance.gpu_count"))
	case err != nil:
		return f, p.T("common.not_number", p.T("instance.gpu_count"))
	case n < 0 || n > maxGPUCount:
		return f, p.T("common.out_of_range", p.T("instance.gpu_count"), 0, maxGPUCount)
	}
	f.Count = n
	return f, ""
}

// keepUpgrade shows the instance page's upgrade form as it was filled.
func keepUpgrade(f upgradeForm) func(*instanceData) {
	return func(d *instanceData) {
		d.UpCount = f.RawCount
		for i := range d.Types {
			d.Types[i].Selected = d.Types[i].ID == f.TypeID
		}
	}
}

// shapeView is one side of an upgrade plan.
type shapeView struct {
	GPUs   string
	CPU    string
	MemGiB int64
	Price  string
}

// upgradeData is the upgrade plan page's data.
type upgradeData struct {
	ID, Name  string
	From, To  shapeView
	Diff      string
	DiffClass string
	SameHost  bool
	HostName  string
	Available bool
	Reason    string
	Speed     string
	Academic  bool
	TypeID    string
	Count     int
	// Key makes the confirm idempotent: a second click is the same change.
	Key string
}

// upgradePlanPage shows what an upgrade would do, priced, before it is
// confirmed: the rental service's plan and the billing quote of an hour of
// each side, as the API's upgrade plan.
func (s *Pages) upgradePlanPage(w http.ResponseWriter, r *http.Request, p *web.Page) {
	id := r.PathValue("id")
	q := r.URL.Query()
	f, msg := readUpgradeForm(p, q.Get("gpu_type"), q.Get("gpu_count"))
	if msg != "" {
		if _, err := s.cfg.Rental.Get(p.Context(), p.Account, id); err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		p.Error = msg
		s.showInstance(w, r, p, http.StatusBadRequest, keepUpgrade(f))
		return
	}
	plan, err := s.cfg.Rental.PlanUpgrade(p.Context(), p.Account, id, rental.UpgradeRequest{TypeID: f.TypeID, Count: &f.Count})
	if err != nil {
		s.actionFailed(w, r, p, err, keepUpgrade(f))
		return
	}
	prices := s.newHourPricer(p.Account)
	from, fromFen, academic, err := s.pricedShape(r, p, prices, plan.From)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	to, toFen, _, err := s.pricedShape(r, p, prices, plan.To)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	d := upgradeData{ID: plan.InstanceID, Name: plan.InstanceID, From: from, To: to, SameHost: plan.SameHost,
		HostName: plan.HostName, Available: plan.Available, Reason: plan.Reason, Academic: academic,
		TypeID: plan.To.TypeID, Count: plan.To.Count, Key: gpurent.NewID("up")}
	if d.HostName == "" {
		d.HostName = plan.HostID
	}
	diff := toFen - fromFen
	d.Diff = p.T("instance.per_hour", money.Signed(diff))
	switch {
	case diff > 0:
		d.DiffClass = "warn"
	case diff < 0:
		d.DiffClass = "ok"
	}
	if plan.From.BF16TFLOPS > 0 && plan.To.BF16TFLOPS > 0 {
		d.Speed = strconv.FormatFloat(plan.To.BF16TFLOPS/plan.From.BF16TFLOPS, 'f', 2, 64)
	}
	p.Title, p.Nav = p.T("upgrade.title"), "dashboard"
	s.site.Render(w, r, p, "instance_upgrade", d)
}

// pricedShape maps one side of a plan with an hour's price of it.
func (s *Pages) pricedShape(r *http.Request, p *web.Page, prices *hourPricer, sh rental.Shape) (shapeView, int64, bool, error) {
	v := shapeView{GPUs: gpusText(p, sh.TypeID, sh.Count), CPU: strconv.FormatFloat(float64(sh.CPUMilli)/1000, 'f', -1, 64),
		MemGiB: sh.MemoryMiB / 1024, Price: "-"}
	hp, ok, err := prices.price(r.Context(), sh.TypeID, sh.Count)
	if err != nil || !ok {
		return v, 0, false, err
	}
	v.Price = p.T("instance.per_hour", money.Format(hp.fen))
	return v, hp.fen, hp.academic, nil
}

// upgradeInstance confirms an upgrade plan.
func (s *Pages) upgradeInstance(w http.ResponseWriter, r *http.Request, p *web.Page) {
	id := r.PathValue("id")
	f, msg := readUpgradeForm(p, r.PostFormValue("gpu_type"), r.PostFormValue("gpu_count"))
	if msg != "" {
		if _, err := s.cfg.Rental.Get(p.Context(), p.Account, id); err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		p.Error = msg
		s.showInstance(w, r, p, http.StatusBadRequest, keepUpgrade(f))
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	if len(key) > 100 {
		key = ""
	}
	if _, _, err := s.cfg.Rental.Upgrade(p.Context(), p.Account, id, rental.UpgradeRequest{TypeID: f.TypeID, Count: &f.Count,
		IdempotencyKey: key}); err != nil {
		s.actionFailed(w, r, p, err, keepUpgrade(f))
		return
	}
	http.Redirect(w, r, instanceURL(id, "upgrade"), http.StatusSeeOther)
}
