package operator

import (
	"net/http"
	"net/url"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
)

// The operator's pages: the overview, the fleet (hosts, GPUs, cordon,
// drain, repair, onboarding), prices and vouchers, academic applications,
// customer accounts and top-ups, incidents and the RMA list, and revenue
// with utilization. Every route is at the operator access level, so
// anyone else gets the 404 page, and every action calls the service the
// API's operator route calls, with the operator's account, so the
// services' own role checks apply too. The pages live in ops_*.go.

// opsRoutes are the operator's pages and form actions. Pages whose
// service the server runs without are left out.
func (s *Pages) opsRoutes() []web.Route {
	rs := []web.Route{{Pattern: "GET /ops", Who: web.Operator, Handle: s.opsOverview}}
	if s.cfg.Fleet != nil {
		rs = append(rs,
			web.Route{Pattern: "GET /ops/fleet", Who: web.Operator, Handle: s.opsFleet},
			web.Route{Pattern: "GET /ops/fleet/hosts/{id}", Who: web.Operator, Handle: s.opsHost},
			web.Route{Pattern: "POST /ops/hosts/{id}/{action}", Who: web.Operator, Handle: s.opsHostAction},
			web.Route{Pattern: "POST /ops/zones/{id}/probe", Who: web.Operator, Handle: s.opsZoneProbe},
			web.Route{Pattern: "POST /ops/gpus/{uuid}/{action}", Who: web.Operator, Handle: s.opsGPUAction})
	}
	if s.cfg.Billing != nil {
		rs = append(rs,
			web.Route{Pattern: "GET /ops/prices", Who: web.Operator, Handle: s.opsPrices},
			web.Route{Pattern: "POST /ops/prices", Who: web.Operator, Handle: s.opsAddPrices})
	}
	if s.cfg.Wallet != nil {
		rs = append(rs,
			web.Route{Pattern: "POST /ops/vouchers", Who: web.Operator, Handle: s.opsCreateVoucher},
			web.Route{Pattern: "GET /ops/accounts", Who: web.Operator, Handle: s.opsAccounts},
			web.Route{Pattern: "POST /ops/accounts/credit", Who: web.Operator, Handle: s.opsCredit},
			web.Route{Pattern: "POST /ops/accounts/transfer", Who: web.Operator, Handle: s.opsConfirmTransfer})
	}
	if s.cfg.Academic != nil {
		rs = append(rs,
			web.Route{Pattern: "GET /ops/academic", Who: web.Operator, Handle: s.opsAcademic},
			web.Route{Pattern: "POST /ops/academic/{id}/{decision}", Who: web.Operator, Handle: s.opsDecideAcademic})
	}
	if s.cfg.Incidents != nil {
		rs = append(rs, web.Route{Pattern: "GET /ops/incidents", Who: web.Operator, Handle: s.opsIncidents})
	}
	if s.cfg.Metering != nil {
		rs = append(rs, web.Route{Pattern: "GET /ops/revenue", Who: web.Operator, Handle: s.opsRevenue})
	}
	if s.cfg.Images != nil {
		rs = append(rs, web.Route{Pattern: "GET /ops/images", Who: web.Operator, Handle: s.opsImages})
	}
	return rs
}

// opsTab is one entry of the operator pages' own menu.
type opsTab struct {
	Href, Label, ID string
	On              bool
}

// opsTabs is the operator menu with on marked; tabs of pages the server
// does not serve are left out.
func (s *Pages) opsTabs(p *web.Page, on string) []opsTab {
	all := []struct {
		name string
		ok   bool
	}{
		{"overview", true}, {"fleet", s.cfg.Fleet != nil}, {"prices", s.cfg.Billing != nil},
		{"academic", s.cfg.Academic != nil}, {"accounts", s.cfg.Wallet != nil},
		{"incidents", s.cfg.Incidents != nil}, {"revenue", s.cfg.Metering != nil}, {"images", s.cfg.Images != nil},
	}
	var tabs []opsTab
	for _, t := range all {
		if !t.ok {
			continue
		}
		href := "/ops/" + t.name
		if t.name == "overview" {
			href = "/ops"
		}
		tabs = append(tabs, opsTab{Href: href, Label: p.T("ops.tab." + t.name), ID: "ops-tab-" + t.name, On: t.name == on})
	}
	return tabs
}

// opsPage sets what every operator page shares: the menu entry, the title
// and the flash of a finished action (?ok=KEY names a message
// "ops.ok.KEY"; anything else is ignored).
func (s *Pages) opsPage(p *web.Page, r *http.Request, titleKey string) {
	p.Nav, p.Title = "ops", p.T(titleKey)
	if ok := r.URL.Query().Get("ok"); ok != "" && s.site.HasMessage("ops.ok."+ok) {
		p.Flash = p.T("ops.ok." + ok)
	}
}

// opsDone redirects (303) to a page after a successful action, naming the
// action's flash message.
func opsDone(w http.ResponseWriter, r *http.Request, path string, q url.Values, ok, fragment string) {
	if q == nil {
		q = url.Values{}
	}
	q.Set("ok", ok)
	u := path + "?" + q.Encode()
	if fragment != "" {
		u += "#" + fragment
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// opsLabel is a state's name in the page's language ("ops.<group>.<value>"),
// or the value itself when it has no message.
func opsLabel(p *web.Page, group, value string) string {
	if key := "ops." + group + "." + value; p.Has(key) {
		return p.T(key)
	}
	return value
}

// opsBadge is the badge class of a state: ok, warn or bad ("" neutral).
func opsBadge(state string) string {
	switch state {
	case string(gpurent.HostReady), string(gpurent.GPUHealthy), string(gpurent.CertPassed),
		string(gpurent.AcademicApproved), string(gpurent.IncidentResolved), "online", "current":
		return "ok"
	// Host and GPU "cordoned", GPU and certification "degraded" are the
	// same words.
	case string(gpurent.HostCordoned), string(gpurent.HostDraining), string(gpurent.GPUDegraded),
		string(gpurent.CertWarn), string(gpurent.CertPending), string(gpurent.AcademicPending), "scheduled",
		string(gpurent.CertNone):
		return "warn"
	case string(gpurent.HostDown), string(gpurent.GPUFailed), string(gpurent.GPURetired), string(gpurent.GPUMissing),
		string(gpurent.CertDelisted), string(gpurent.AcademicRejected), string(gpurent.IncidentOpen), "offline":
		return "bad"
	}
	return ""
}

// opsFieldError is a field's problem in the page's language.
func opsFieldError(p *web.Page, problem, labelKey string) string {
	return p.T("ops.err."+problem, p.T(labelKey))
}

// opsNow is the console's clock.
func (s *Pages) opsNow() time.Time { return s.cfg.Now() }

// opsDuration shows a duration compactly in the page's language: "3d 4h",
// "2h 5m", "40s".
func opsDuration(p *web.Page, d time.Duration) string {
	if d < 0 {
		d = 0
	}
	days, hours, mins := int(d/(24*time.Hour)), int(d/time.Hour)%24, int(d/time.Minute)%60
	switch {
	case days > 0:
		return p.T("ops.dur.dh", days, hours)
	case hours > 0:
		return p.T("ops.dur.hm", hours, mins)
	case mins > 0:
		return p.T("ops.dur.m", mins)
	}
	return p.T("ops.dur.s", int(d/time.Second))
}

// opsMessages are the operator pages' messages.
func opsMessages() map[string]web.Pair {
	return map[string]web.Pair{
		"ops.tab.overview":  {"概览", "Overview"},
		"ops.tab.fleet":     {"机群", "Fleet"},
		"ops.tab.prices":    {"价格与代金券", "Prices & vouchers"},
		"ops.tab.academic":  {"学术认证", "Academic"},
		"ops.tab.accounts":  {"客户账户", "Accounts"},
		"ops.tab.incidents": {"故障与赔付", "Incidents"},
		"ops.tab.revenue":   {"收入与利用率", "Revenue"},
		"ops.tab.images":    {"基础镜像", "Base images"},

		"ops.ok.host_cordon":        {"主机已封锁：不再调度新实例。", "Host cordoned: no new instances go there."},
		"ops.ok.zone_probe":         {"测速端点已设置：GPU 市场的延迟测试改测该端点。", "Probe set: the market's latency test now times it."},
		"ops.ok.zone_probe_cleared": {"测速端点已移除：该可用区的延迟测试改测控制平面，并注明。", "Probe removed: the zone's latency test times the control plane, and says so."},
		"ops.ok.host_uncordon":      {"主机已恢复调度。", "Host is back in placement."},
		"ops.ok.host_drain":         {"主机正在排空：其上的实例正在迁移。", "Host is draining: its instances are being moved."},
		"ops.ok.gpu_cordon":         {"GPU 已封锁。", "GPU cordoned."},
		"ops.ok.gpu_repair":         {"GPU 已标记为修复。", "GPU marked repaired."},
		"ops.ok.prices":             {"新价格版本已保存，将在生效时间起适用。", "New price version saved; it applies from its effective time."},
		"ops.ok.voucher":            {"代金券已创建。", "Voucher created."},
		"ops.ok.academic_approve":   {"申请已批准：该账户享受学术价格。", "Application approved: the account gets academic prices."},
		"ops.ok.academic_reject":    {"申请已驳回，客户会看到驳回理由。", "Application rejected; the customer sees the reason."},
		"ops.ok.credit":             {"已为客户充值。", "Customer credited."},
		"ops.ok.transfer":           {"银行转账已确认入账。", "Bank transfer confirmed and booked."},

		"ops.err.required":        {"%s 为必填项", "%s is required"},
		"ops.err.negative":        {"%s 不能为负数", "%s cannot be negative"},
		"ops.err.format":          {"%s 的格式不正确", "%s is not valid"},
		"ops.err.range":           {"%s 超出允许范围", "%s is out of range"},
		"ops.err.too_long":        {"%s 太长", "%s is too long"},
		"ops.err.control":         {"%s 只能是一行文字", "%s must be one line of text"},
		"ops.err.past":            {"%s 不能早于现在", "%s cannot be in the past"},
		"ops.err.off_peak_dearer": {"%s：闲时价格不能高于忙时价格", "%s: the off-peak price cannot exceed the peak price"},
		"ops.err.academic_dearer": {"%s：学术价格不能高于对应的标价", "%s: an academic price cannot exceed its list price"},

		"ops.dur.dh": {"%d天%d小时", "%dd %dh"},
		"ops.dur.hm": {"%d小时%d分", "%dh %dm"},
		"ops.dur.m":  {"%d分钟", "%dm"},
		"ops.dur.s":  {"%d秒", "%ds"},

		"ops.host.ready":    {"可调度", "ready"},
		"ops.host.cordoned": {"已封锁", "cordoned"},
		"ops.host.draining": {"排空中", "draining"},
		"ops.host.down":     {"宕机", "down"},

		"ops.health.healthy":  {"健康", "healthy"},
		"ops.health.degraded": {"降级", "degraded"},
		"ops.health.cordoned": {"已封锁", "cordoned"},
		"ops.health.failed":   {"故障", "failed"},
		"ops.health.retired":  {"已退役", "retired"},
		"ops.health.missing":  {"缺失", "missing"},

		"ops.cert.certified":   {"已认证", "certified"},
		"ops.cert.warn":        {"有警告", "warning"},
		"ops.cert.uncertified": {"未认证", "uncertified"},
		"ops.cert.rerun":       {"待复测", "re-run due"},
		"ops.cert.delisted":    {"已下架", "delisted"},
		"ops.cert.degraded":    {"降级出租", "listed degraded"},

		"ops.class.app":         {"用户程序", "tenant program"},
		"ops.class.info":        {"提示", "info"},
		"ops.class.reset":       {"需重置", "reset"},
		"ops.class.drain_reset": {"排空并重置", "drain and reset"},
		"ops.class.node":        {"整机故障", "node fault"},
		"ops.class.rma":         {"返厂", "RMA"},
		"ops.class.degraded":    {"性能降级", "degraded"},
		"ops.class.host":        {"主机硬件", "host hardware"},
		"ops.class.host_down":   {"主机失联", "host down"},
		"ops.class.unknown":     {"未知", "unknown"},
		"ops.attr.host":         {"平台责任", "platform"},
		"ops.attr.tenant":       {"用户责任", "tenant"},
		"ops.attr.none":         {"无", "none"},
		"ops.incstate.open":     {"进行中", "open"},
		"ops.incstate.resolved": {"已解决", "resolved"},

		"ops.app.pending":         {"待审核", "pending"},
		"ops.app.approved":        {"已批准", "approved"},
		"ops.app.rejected":        {"已驳回", "rejected"},
		"ops.method.email_domain": {"高校邮箱", "university e-mail"},
		"ops.method.proof":        {"证明材料", "proof"},

		"ops.overview.title":            {"运营概览", "Operations overview"},
		"ops.overview.hosts":            {"主机", "Hosts"},
		"ops.overview.online":           {"在线 %d 台", "%d online"},
		"ops.overview.gpus":             {"GPU", "GPUs"},
		"ops.overview.allocated":        {"已分配 %d 块（%s）", "%d allocated (%s)"},
		"ops.overview.certification":    {"算力认证", "Certification"},
		"ops.overview.util_now":         {"当前 GPU 利用率", "GPU utilization now"},
		"ops.overview.sampled":          {"基于 %d 块 GPU 的最新采样", "from the latest sample of %d GPUs"},
		"ops.overview.open_incidents":   {"进行中的故障", "Open incidents"},
		"ops.overview.see_incidents":    {"查看故障", "See incidents"},
		"ops.overview.pending_academic": {"待审核学术申请", "Academic applications to decide"},
		"ops.overview.decide":           {"去审核", "Decide"},
		"ops.overview.revenue_today":    {"今日收入", "Revenue today"},
		"ops.overview.revenue_month":    {"本月 %s", "This month: %s"},
		"ops.overview.see_revenue":      {"查看收入", "See revenue"},

		"ops.fleet.title":            {"机群", "Fleet"},
		"ops.fleet.zones":            {"可用区", "Zones"},
		"ops.fleet.zone":             {"可用区", "Zone"},
		"ops.fleet.zone_name":        {"名称", "Name"},
		"ops.fleet.probe":            {"测速端点", "Latency probe"},
		"ops.fleet.probe_none":       {"无：测控制平面", "none: the control plane is timed"},
		"ops.fleet.probe_set":        {"保存", "Save"},
		"ops.fleet.hosts":            {"主机", "Hosts"},
		"ops.fleet.host":             {"主机", "Host"},
		"ops.fleet.gpus_free_total":  {"空闲 / 总 GPU", "GPUs free / total"},
		"ops.fleet.online":           {"在线", "online"},
		"ops.fleet.offline":          {"离线", "offline"},
		"ops.fleet.runtime":          {"运行时", "runtime"},
		"ops.fleet.process_note":     {"演示用，无隔离", "demo only, no isolation"},
		"ops.fleet.last_seen":        {"最近心跳", "last seen"},
		"ops.fleet.cordon":           {"封锁", "Cordon"},
		"ops.fleet.uncordon":         {"恢复调度", "Uncordon"},
		"ops.fleet.drain":            {"排空", "Drain"},
		"ops.fleet.confirm_cordon":   {"确定封锁主机 %s 吗？新实例不会再调度到该主机，运行中的实例不受影响。", "Cordon host %s? No new instances will be placed on it; running ones stay."},
		"ops.fleet.confirm_uncordon": {"确定让主机 %s 恢复调度吗？", "Put host %s back into placement?"},
		"ops.fleet.confirm_drain":    {"确定排空主机 %s 吗？其上运行的实例将迁移到其他主机。", "Drain host %s? Its running instances move to other hosts."},
		"ops.fleet.confirm_repair":   {"确认该 GPU 已修复或更换？", "Mark this GPU repaired or replaced?"},
		"ops.fleet.gpu":              {"GPU", "GPU"},
		"ops.fleet.health":           {"健康", "Health"},
		"ops.fleet.cert":             {"认证", "Certification"},
		"ops.fleet.cert_ratio":       {"实测 %d.%d%%", "measured %d.%d%%"},
		"ops.fleet.util":             {"利用率", "Utilization"},
		"ops.fleet.mem":              {"显存", "Memory"},
		"ops.fleet.mem_value":        {"%s / %s GiB", "%s / %s GiB"},
		"ops.fleet.holder":           {"占用", "Held by"},
		"ops.fleet.bench":            {"基准测试", "benchmark"},
		"ops.fleet.free":             {"空闲", "free"},
		"ops.fleet.actions":          {"操作", "Actions"},
		"ops.fleet.reason":           {"封锁原因", "Reason to cordon"},
		"ops.fleet.note":             {"维修说明", "Repair note"},
		"ops.fleet.gpu_cordon":       {"封锁 GPU", "Cordon GPU"},
		"ops.fleet.repair":           {"已修复", "Repaired"},
		"ops.fleet.all":              {"全部", "all"},
		"ops.fleet.state":            {"状态", "State"},
		"ops.fleet.search":           {"搜索", "Search"},
		"ops.fleet.search_hint":      {"主机名或 ID", "host name or id"},
		"ops.fleet.filter":           {"筛选", "Filter"},
		"ops.fleet.matched":          {"%d 台主机符合条件", "%d hosts match"},
		"ops.fleet.agent":            {"代理", "Agent"},
		"ops.fleet.gpu_health":       {"GPU 健康", "GPU health"},
		"ops.fleet.all_healthy":      {"全部健康", "all healthy"},
		"ops.fleet.page":             {"第 %d / %d 页", "page %d of %d"},
		"ops.fleet.no_hosts":         {"还没有主机。用下面的命令接入第一台。", "No hosts yet. Join the first with the command below."},
		"ops.fleet.onboard":          {"接入新主机", "Onboard a host"},
		"ops.fleet.onboard_help": {"每台主机用自己的一次性接入令牌：先以运营者身份运行第一行命令创建令牌（只显示一次，默认 24 小时内有效，只能用一次），把令牌写入新 GPU 服务器上的 /etc/gpurent/join-token（权限 0600，或放进环境变量 GPURENT_JOIN_TOKEN），再在该服务器上运行第二行命令；主机注册后会出现在上面的列表中。令牌不要写在命令行上。",
			"Each host joins with its own one-time join token: run the first command as an operator to create it (shown once, valid 24 hours, used once), put it in /etc/gpurent/join-token on the new GPU server (mode 0600, or in the GPURENT_JOIN_TOKEN environment variable), then run the second command there; the host appears above once it registers. Never put the token on a command line."},

		"ops.prices.title":            {"价格与代金券", "Prices and vouchers"},
		"ops.prices.help":             {"价格按版本管理：每个版本自生效时间起适用，从不追溯。单位为人民币，每 GPU。", "Prices are versioned: each version applies from its effective time, never backwards. CNY per GPU."},
		"ops.prices.new":              {"新增价格版本", "Add a price version"},
		"ops.prices.effective":        {"生效时间（北京时间）", "Effective (Beijing time)"},
		"ops.prices.off_start":        {"闲时开始", "Off-peak from"},
		"ops.prices.off_end":          {"闲时结束", "Off-peak until"},
		"ops.prices.weekends":         {"周末全天闲时", "Weekends are off-peak"},
		"ops.prices.form_help":        {"已填入最新版本的价格（元）；修改需要调整的项即可。学术价格即学术折扣后的价格。", "Filled with the latest version's prices (yuan); change what you need. Academic prices are the prices after the academic discount."},
		"ops.prices.type":             {"GPU 型号", "GPU type"},
		"ops.prices.note":             {"备注", "Note"},
		"ops.prices.submit":           {"保存新版本", "Save the new version"},
		"ops.prices.versions":         {"价格版本", "Price versions"},
		"ops.prices.from":             {"生效于", "From"},
		"ops.prices.current":          {"当前生效", "in force"},
		"ops.prices.scheduled":        {"待生效", "scheduled"},
		"ops.prices.past":             {"已过期", "past"},
		"ops.prices.off_peak_rule":    {"闲时：", "Off-peak:"},
		"ops.prices.rule_window":      {"每天 %s–%s", "daily %s–%s"},
		"ops.prices.rule_weekends":    {"，周末全天", ", all weekend"},
		"ops.prices.rule_none":        {"无每日闲时段", "no daily window"},
		"ops.prices.academic_share":   {"学术价/标价", "Academic / list"},
		"ops.price.peak":              {"忙时/小时", "Peak/h"},
		"ops.price.off_peak":          {"闲时/小时", "Off-peak/h"},
		"ops.price.academic_peak":     {"学术忙时/小时", "Academic peak/h"},
		"ops.price.academic_off_peak": {"学术闲时/小时", "Academic off-peak/h"},
		"ops.price.daily":             {"日包", "Daily"},
		"ops.price.weekly":            {"周包", "Weekly"},
		"ops.price.monthly":           {"月包", "Monthly"},
		"ops.price.academic_daily":    {"学术日包", "Academic daily"},
		"ops.price.academic_weekly":   {"学术周包", "Academic weekly"},
		"ops.price.academic_monthly":  {"学术月包", "Academic monthly"},
		"ops.price.no_gpu":            {"无卡模式/小时", "No-GPU/h"},

		"ops.voucher.title":      {"代金券", "Vouchers"},
		"ops.voucher.new":        {"创建代金券", "Create a voucher"},
		"ops.voucher.amount":     {"金额（元）", "Amount (yuan)"},
		"ops.voucher.promo":      {"赠送额度（随代金券到期，不可提现）", "Promo credit (expires with the voucher, not cash)"},
		"ops.voucher.expires":    {"有效期至", "Expires"},
		"ops.voucher.max":        {"可兑换账户数", "Max redemptions"},
		"ops.voucher.create":     {"创建", "Create"},
		"ops.voucher.code":       {"兑换码", "Code"},
		"ops.voucher.kind_cash":  {"现金券", "Cash voucher"},
		"ops.voucher.kind_promo": {"赠送券", "Promo voucher"},
		"ops.voucher.redeemed":   {"已兑换 %d / %d", "redeemed %d of %d"},
		"ops.voucher.created":    {"创建于", "created"},
		"ops.voucher.lookup":     {"查询代金券", "Look up a voucher"},
		"ops.voucher.find":       {"查询", "Look up"},
		"ops.voucher.not_found":  {"找不到代金券 %s", "No voucher %s"},
		"ops.voucher.list_note":  {"兑换码只在创建时显示一次全文；请妥善保存。", "A code is shown in full when it is created: keep it safe."},
		"ops.voucher.recent":     {"最近的代金券", "Recent vouchers"},
		"ops.voucher.used":       {"已兑换 / 上限", "Redeemed / limit"},

		"ops.academic.title":           {"学术认证申请", "Academic applications"},
		"ops.academic.pending":         {"待审核", "To decide"},
		"ops.academic.none_pending":    {"没有待审核的申请。", "No applications waiting."},
		"ops.academic.applied":         {"申请于", "Applied"},
		"ops.academic.proof_link":      {"查看证明链接", "Open the proof link"},
		"ops.academic.proof_file":      {"附件（%d 字节）", "File attached (%d bytes)"},
		"ops.academic.note":            {"备注（驳回时必填）", "Note (required to reject)"},
		"ops.academic.approve":         {"批准", "Approve"},
		"ops.academic.reject":          {"驳回", "Reject"},
		"ops.academic.reason_required": {"驳回需要填写客户可以据此改进的理由", "A rejection needs a reason the customer can act on"},
		"ops.academic.decided":         {"已处理", "Decided"},
		"ops.academic.decided_at":      {"处理时间", "Decided"},
		"ops.academic.applicant":       {"申请人", "Applicant"},
		"ops.academic.institution":     {"学校/机构", "Institution"},
		"ops.academic.state":           {"结果", "Decision"},
		"ops.academic.until":           {"有效期至", "Valid until"},

		"ops.accounts.title":             {"客户账户", "Customer accounts"},
		"ops.accounts.search":            {"搜索", "Search"},
		"ops.accounts.search_hint":       {"邮箱、名称或账户 ID", "e-mail, name or account id"},
		"ops.accounts.find":              {"搜索", "Search"},
		"ops.accounts.email":             {"邮箱", "E-mail"},
		"ops.accounts.name":              {"名称", "Name"},
		"ops.accounts.balance":           {"可用余额", "Spendable"},
		"ops.accounts.cash_credit":       {"现金 / 赠送", "Cash / credit"},
		"ops.accounts.arrears":           {"欠费 %s", "arrears %s"},
		"ops.accounts.academic":          {"学术认证", "Academic"},
		"ops.accounts.academic_none":     {"未认证", "no"},
		"ops.accounts.academic_pending":  {"审核中", "pending"},
		"ops.accounts.academic_verified": {"已认证", "verified"},
		"ops.accounts.until":             {"至", "until"},
		"ops.accounts.created":           {"注册时间", "Created"},
		"ops.accounts.top_up":            {"充值", "Top up"},
		"ops.accounts.none":              {"没有匹配的客户账户。", "No customer account matches."},
		"ops.accounts.more":              {"还有 %d 个账户匹配，请缩小搜索范围。", "%d more match: narrow the search."},
		"ops.accounts.credit_title":      {"为客户充值", "Credit a customer"},
		"ops.accounts.credit_help":       {"运营充值计入客户现金余额，理由会记录在账本中。", "An operator credit goes to the customer's cash; the reason is kept in the ledger."},
		"ops.accounts.account":           {"账户（邮箱或 ID）", "Account (e-mail or id)"},
		"ops.accounts.amount":            {"金额（元）", "Amount (yuan)"},
		"ops.accounts.reason":            {"理由", "Reason"},
		"ops.accounts.credit_submit":     {"充值", "Credit"},
		"ops.accounts.no_such":           {"账户 %s 不存在", "No account %s"},
		"ops.accounts.transfer_title":    {"确认银行转账", "Confirm a bank transfer"},
		"ops.accounts.transfer_help":     {"在对公账户看到到账后，按客户付款时的参考号和金额确认。", "When the money shows on the operator's account, confirm it by the payment's reference and amount."},
		"ops.accounts.transfer_confirm":  {"确认这笔转账已到账吗？", "Has this transfer arrived?"},
		"ops.accounts.provider":          {"支付方式", "Provider"},
		"ops.accounts.reference":         {"付款参考号", "Payment reference"},
		"ops.accounts.transfer_submit":   {"确认到账", "Confirm"},
		"ops.accounts.no_payment":        {"找不到付款参考号 %s", "No payment with reference %s"},

		"ops.img.title":    {"基础镜像目录", "Base image catalog"},
		"ops.img.help":     {"客户在租用时按名称选用这些镜像。用命令行修改目录:", "Customers rent these images by name. Change the catalog from the command line:"},
		"ops.img.name":     {"名称", "Name"},
		"ops.img.ref":      {"镜像地址", "Image reference"},
		"ops.img.versions": {"版本", "Versions"},
		"ops.img.gpus":     {"适用 GPU", "GPU types"},
		"ops.img.size":     {"大小", "Size"},
		"ops.img.prepull":  {"预拉取", "Pre-pulled"},
		"ops.img.updated":  {"更新时间", "Updated"},
		"ops.img.none":     {"目录里还没有镜像。", "The catalog has no images yet."},
		"ops.img.yes":      {"是", "yes"},
		"ops.img.any":      {"全部", "all"},

		"ops.inc.title":        {"故障、赔付与返厂", "Incidents, credits and RMA"},
		"ops.inc.open":         {"进行中", "Open"},
		"ops.inc.none_open":    {"没有进行中的故障。", "No open incidents."},
		"ops.inc.recent":       {"最近的故障", "Recent incidents"},
		"ops.inc.started":      {"开始", "Started"},
		"ops.inc.ended":        {"结束", "Ended"},
		"ops.inc.class":        {"类别", "Class"},
		"ops.inc.attribution":  {"责任", "Attribution"},
		"ops.inc.cause":        {"原因", "Cause"},
		"ops.inc.where":        {"位置", "Where"},
		"ops.inc.instance":     {"实例", "Instance"},
		"ops.inc.account":      {"账户", "Account"},
		"ops.inc.duration":     {"时长", "Duration"},
		"ops.inc.credit":       {"赔付", "Credit"},
		"ops.inc.credits":      {"已发放的 SLA 赔付", "SLA credits posted"},
		"ops.inc.credit_total": {"合计 %s", "total %s"},
		"ops.inc.rma":          {"返厂候选（RMA）", "RMA candidates"},
		"ops.inc.rma_help":     {"按规则应退回厂商的 GPU：7 天内两次需重置的故障、30 天内两次整机故障，或一次返厂级故障。", "GPUs the rules want returned to the vendor: a reset-class fault twice in 7 days, a node fault twice in 30, or an RMA-class fault."},

		"ops.revenue.title":      {"收入与利用率", "Revenue and utilization"},
		"ops.revenue.month":      {"月份", "Month"},
		"ops.revenue.show":       {"查看", "Show"},
		"ops.revenue.range":      {"%s 至 %s（北京时间）", "%s to %s (Beijing time)"},
		"ops.revenue.total":      {"合计", "Total"},
		"ops.revenue.all":        {"全月", "Month"},
		"ops.revenue.per_day":    {"每日收入", "Revenue per day"},
		"ops.revenue.chart_unit": {"单位：元。", "In yuan."},
		"ops.revenue.day":        {"日期", "Day"},
		"ops.revenue.none":       {"本月还没有收入。", "No revenue this month yet."},
		"ops.revenue.util":       {"各型号 GPU 利用率（每日）", "Utilization per GPU type (per day)"},
		"ops.revenue.type":       {"GPU 型号", "GPU type"},
		"ops.revenue.gpus":       {"GPU 数", "GPUs"},
		"ops.revenue.gpu_hours":  {"已分配 GPU·小时", "Allocated GPU-hours"},
		"ops.revenue.util_share": {"利用率", "Utilization"},
		"ops.revenue.util_note":  {"利用率 = 实例运行占用的 GPU·小时 ÷ 机群的 GPU·小时；容量按当前机群计算。", "Utilization = GPU-hours instances ran ÷ the fleet's GPU-hours; capacity is today's fleet."},
	}
}

// opsRefused answers a service error of an operator's form: an invalid or
// conflicting request re-renders the form with the localized error (again),
// anything else is the error page. False when err is nil.
func (s *Pages) opsRefused(w http.ResponseWriter, r *http.Request, p *web.Page, err error, again func(string)) bool {
	switch {
	case err == nil:
		return false
	case gpurent.IsCode(err, gpurent.CodeInvalid) || gpurent.IsCode(err, gpurent.CodeConflict):
		p.FormError(err)
		again(p.Error)
	default:
		s.site.Fail(w, r, p, err)
	}
	return true
}
