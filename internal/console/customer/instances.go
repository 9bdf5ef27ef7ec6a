package customer

import (
	"strconv"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
)

// The customer's dashboard and instance pages: the instance list with live
// states and the wallet's summary (dashboard.go); one instance with its
// access, charts, moves, incidents and verify runs (instance_page.go), its
// form actions (instance_actions.go), and the live streams of both pages
// (instance_live.go). Every number comes from the services the API calls,
// with the viewer's account, so another customer's instance is not found.

// instanceRoutes are the dashboard's and the instance pages' routes.
func (s *Pages) instanceRoutes() []web.Route {
	return []web.Route{
		{Pattern: "GET /dashboard", Who: web.Customer, Handle: s.dashboard},
		{Pattern: "GET /dashboard/events", Who: web.Customer, Handle: s.dashboardEvents},
		{Pattern: "GET /instances/{id}", Who: web.Customer, Handle: s.instancePage},
		{Pattern: "GET /instances/{id}/events", Who: web.Customer, Handle: s.instanceEvents},
		{Pattern: "GET /instances/{id}/upgrade", Who: web.Customer, Handle: s.upgradePlanPage},
		{Pattern: "POST /instances/{id}/upgrade", Who: web.Customer, Handle: s.upgradeInstance},
		{Pattern: "POST /instances/{id}/stop", Who: web.Customer, Handle: s.stopInstance},
		{Pattern: "POST /instances/{id}/start", Who: web.Customer, Handle: s.startInstance},
		{Pattern: "POST /instances/{id}/delete", Who: web.Customer, Handle: s.deleteInstance},
		{Pattern: "POST /instances/{id}/migrate", Who: web.Customer, Handle: s.migrateInstance},
		{Pattern: "POST /instances/{id}/port", Who: web.Customer, Handle: s.openPort},
		{Pattern: "POST /instances/{id}/verify", Who: web.Customer, Handle: s.verifyInstance},
		{Pattern: "POST /instances/{id}/startup", Who: web.Customer, Handle: s.setStartup},
		{Pattern: "GET /instances/{id}/logs", Who: web.Customer, Handle: s.instanceLogs},
	}
}

// instanceMessages are the dashboard's and the instance pages' messages.
func instanceMessages() map[string]web.Pair {
	return map[string]web.Pair{
		"instance.op.kind.upgrade":       {"升降配", "upgrade"},
		"instance.op.kind.migrate":       {"迁移", "migrate"},
		"instance.op.kind.start":         {"换机启动", "start elsewhere"},
		"instance.op.kind.failover":      {"故障转移", "failover"},
		"instance.op.step.queued":        {"排队中", "queued"},
		"instance.op.step.copying":       {"复制数据中", "copying"},
		"instance.op.step.final":         {"最后一轮复制", "final copy"},
		"instance.op.step.starting":      {"启动中", "starting"},
		"instance.op.step.cleanup":       {"清理中", "cleaning up"},
		"instance.op.step.rolling_back":  {"回滚中", "rolling back"},
		"instance.op.step.done":          {"完成", "done"},
		"instance.op.step.rolled_back":   {"已回滚", "rolled back"},
		"instance.verify_state.queued":   {"排队中", "queued"},
		"instance.verify_state.running":  {"运行中", "running"},
		"instance.verify_state.done":     {"已完成", "done"},
		"instance.verify_state.failed":   {"失败", "failed"},
		"instance.verify_state.canceled": {"已取消", "canceled"},
		// States.
		"instance.state.pending":      {"排队中", "Pending"},
		"instance.state.provisioning": {"启动中", "Starting"},
		"instance.state.running":      {"运行中", "Running"},
		"instance.state.stopping":     {"关机中", "Stopping"},
		"instance.state.stopped":      {"已关机", "Stopped"},
		"instance.state.deleting":     {"释放中", "Deleting"},
		"instance.state.deleted":      {"已释放", "Deleted"},
		"instance.state.failed":       {"失败", "Failed"},
		// Plans.
		"instance.plan.hourly":  {"按量计费", "Hourly"},
		"instance.plan.daily":   {"包天", "Daily package"},
		"instance.plan.weekly":  {"包周", "Weekly package"},
		"instance.plan.monthly": {"包月", "Monthly package"},
		"instance.prepaid":      {"已预付", "prepaid"},
		"instance.no_gpu":       {"无卡模式", "No-GPU mode"},
		"instance.per_hour":     {"%s/小时", "%s/h"},
		// Dashboard.
		"dashboard.title":          {"控制台", "Dashboard"},
		"dashboard.instances":      {"我的实例", "My instances"},
		"dashboard.rent":           {"租用 GPU", "Rent GPUs"},
		"dashboard.market":         {"看看 GPU 市场", "Browse the GPU market"},
		"dashboard.empty":          {"还没有实例。", "No instances yet."},
		"dashboard.col.name":       {"名称", "Name"},
		"dashboard.col.gpus":       {"GPU", "GPUs"},
		"dashboard.col.state":      {"状态", "State"},
		"dashboard.col.where":      {"可用区 / 主机", "Zone / host"},
		"dashboard.col.created":    {"创建时间", "Created"},
		"dashboard.col.cost":       {"每小时费用", "Cost per hour"},
		"dashboard.balance":        {"可用余额", "Spendable balance"},
		"dashboard.cash_credit":    {"现金 %s · 赠送/补偿 %s", "Cash %s · credit %s"},
		"dashboard.burn":           {"当前消耗", "Burn rate"},
		"dashboard.runway":         {"预计可用", "Runway"},
		"dashboard.runway_none":    {"无消耗", "Nothing burning"},
		"dashboard.topup":          {"充值", "Top up"},
		"dashboard.alerts":         {"提醒", "Alerts"},
		"dashboard.alert.arrears":  {"您有 %s 欠费：结清前实例无法启动。", "You owe %s: no instance can start until it is paid."},
		"dashboard.alert.runway":   {"余额仅够当前实例运行 %s，届时实例将自动关机。", "Your balance lasts %s at this rate; then the instances stop."},
		"dashboard.alert.empty":    {"余额不足：运行中的实例即将关机。", "Your balance is spent: running instances are about to stop."},
		"dashboard.alert.incident": {"%d 个故障正在处理，受影响的时间将自动补偿。", "%d incidents are being handled; the time lost is credited automatically."},
		"dashboard.alert.ok":       {"一切正常。", "All is well."},
		"dashboard.notices":        {"最近通知", "Recent notices"},
		"dashboard.done.deleted":   {"实例已开始释放。", "The instance is being deleted."},
		// Durations.
		"dur.dh": {"%d 天 %d 小时", "%d d %d h"},
		"dur.hm": {"%d 小时 %d 分钟", "%d h %d min"},
		"dur.m":  {"%d 分钟", "%d min"},
		"dur.s":  {"%d 秒", "%d s"},
		// Instance page.
		"instance.title":          {"实例 %s", "Instance %s"},
		"instance.back":           {"返回控制台", "Back to the dashboard"},
		"instance.overview":       {"概况", "Overview"},
		"instance.id":             {"实例 ID", "Instance id"},
		"instance.gpus":           {"GPU", "GPUs"},
		"instance.image":          {"镜像", "Image"},
		"instance.plan":           {"计费方式", "Plan"},
		"instance.price":          {"当前价格", "Price now"},
		"instance.academic":       {"学术价", "academic price"},
		"instance.offpeak_note":   {"按此刻起一小时报价（含闲时价）", "quoted for the next hour (off-peak included)"},
		"instance.where":          {"位置", "Where"},
		"instance.resources":      {"CPU / 内存", "CPU / memory"},
		"instance.cpu_mem":        {"%s 核 / %d GiB", "%s cores / %d GiB"},
		"instance.created":        {"创建时间", "Created"},
		"instance.reason":         {"原因", "Reason"},
		"instance.volume":         {"数据盘", "Data volume"},
		"instance.volume_text":    {"%d GiB，挂载于 %s，关机、升降配和迁移时都会保留。", "%d GiB at %s; kept through stop, upgrade and migration."},
		"instance.volume_none":    {"无数据盘", "No volume"},
		"instance.access":         {"连接", "Access"},
		"instance.ssh":            {"SSH 登录", "SSH"},
		"instance.scp":            {"上传文件", "Copy files in"},
		"instance.fingerprint":    {"网关主机密钥指纹（首次连接时核对）", "The gateway's host key fingerprint (check it on first connect)"},
		"instance.ssh_off":        {"本平台未开启 SSH 网关。", "This platform runs no SSH gateway."},
		"instance.ssh_keys":       {"使用账户中的 SSH 公钥登录：", "Sign in with a public key from your account:"},
		"instance.ssh_keys_link":  {"管理 SSH 公钥", "manage SSH keys"},
		"instance.not_running":    {"实例运行时才能连接。", "You can connect while the instance runs."},
		"instance.ports":          {"Web 端口", "Web ports"},
		"instance.ports_hint":     {"在浏览器中打开实例内的 HTTP 服务：每个端口有自己的网址，应用位于其根路径 /，无需设置 base URL（链接 10 分钟内有效）。", "Open an HTTP service of the instance in your browser: each port has an address of its own, with the app at its / (no base URL needed; the link is valid for 10 minutes)."},
		"instance.jupyter":        {"打开 Jupyter (8888)", "Open Jupyter (8888)"},
		"instance.tensorboard":    {"打开 TensorBoard (6006)", "Open TensorBoard (6006)"},
		"instance.port":           {"端口", "Port"},
		"instance.port_open":      {"打开", "Open"},
		"instance.charts":         {"GPU 监控", "GPU monitoring"},
		"instance.util":           {"GPU 利用率", "GPU utilization"},
		"instance.mem":            {"显存占用", "GPU memory used"},
		"instance.charts_none":    {"实例运行后显示 GPU 的利用率和显存。", "GPU utilization and memory show here while the instance runs."},
		"instance.actions":        {"操作", "Actions"},
		"instance.stop":           {"关机", "Stop"},
		"instance.start":          {"开机", "Start"},
		"instance.delete":         {"释放实例", "Delete"},
		"instance.confirm_stop":   {"确定关机吗？GPU 将被释放，数据盘保留。", "Stop the instance? Its GPUs are released; the volume stays."},
		"instance.confirm_delete": {"确定释放实例吗？数据盘将被删除，无法恢复。", "Delete the instance? Its volume is deleted for good."},
		"instance.upgrade":        {"升降配 / 无卡模式", "Upgrade, downgrade or no-GPU mode"},
		"instance.upgrade_hint":   {"选择新的 GPU 型号和数量（0 为无卡模式），先查看方案与差价，再确认。", "Pick the GPU type and count (0 is no-GPU mode); you see the plan and the price difference before you confirm."},
		"instance.gpu_type":       {"GPU 型号", "GPU type"},
		"instance.gpu_count":      {"GPU 数量", "GPU count"},
		"instance.free":           {"%s（空闲 %d）", "%s (%d free)"},
		"instance.plan_button":    {"查看方案", "Show the plan"},
		"instance.migrate":        {"迁移", "Migrate"},
		"instance.migrate_hint":   {"同型号同数量迁移到其他主机；数据盘随实例复制。", "Move to another host with the same GPUs; the volume is copied along."},
		"instance.zone":           {"可用区", "Zone"},
		"instance.zone_any":       {"任意可用区", "Any zone"},
		"instance.migrate_button": {"迁移", "Migrate"},
		"instance.confirm_migrate": {"确定迁移吗？复制完成后实例会短暂停机。",
			"Migrate? The instance stops briefly once the copy is done."},
		"instance.operations":    {"进行中的操作", "Operations"},
		"instance.events":        {"事件记录", "Events"},
		"instance.col.time":      {"时间", "Time"},
		"instance.col.kind":      {"类型", "Kind"},
		"instance.col.message":   {"内容", "Message"},
		"instance.incidents":     {"故障与补偿（本月）", "Incidents and credits this month"},
		"instance.availability":  {"本月可用性 %s，已补偿 %s", "Availability this month %s; credited %s"},
		"instance.no_incidents":  {"本月没有故障。", "No incidents this month."},
		"instance.col.cause":     {"原因", "Cause"},
		"instance.col.started":   {"开始", "Started"},
		"instance.col.ended":     {"结束", "Ended"},
		"instance.col.credit":    {"补偿", "Credit"},
		"instance.ongoing":       {"处理中", "ongoing"},
		"instance.verify":        {"验证我的 GPU", "Verify my GPUs"},
		"instance.verify_hint":   {"在您的实例 GPU 上运行基准测试（约 5 分钟），结果与同型号集群中位数对比。", "Runs the benchmark suite on your instance's GPUs (about 5 minutes) and compares them with the fleet median of the type."},
		"instance.verify_button": {"开始验证", "Verify now"},
		"instance.verify_none":   {"尚未验证。", "No verify runs yet."},
		"instance.col.probe":     {"测试项", "Probe"},
		"instance.col.result":    {"结果", "Result"},
		"instance.col.median":    {"集群中位数", "Fleet median"},
		"instance.col.ratio":     {"相对中位数", "vs. median"},
		"instance.col.outcome":   {"结论", "Verdict"},
		"instance.verify_run":    {"%s · %s · %s", "%s · %s · %s"},
		// Upgrade plan.
		"upgrade.title":       {"升降配方案", "Upgrade plan"},
		"upgrade.from":        {"当前", "Now"},
		"upgrade.to":          {"变更后", "After"},
		"upgrade.diff":        {"每小时差价", "Difference per hour"},
		"upgrade.same_host":   {"在当前主机上完成，只需重启一次容器，数据原地保留。", "Done on the same host: one container restart, the data stays in place."},
		"upgrade.other_host":  {"将迁移到主机 %s：先在运行中复制数据，再短暂停机完成切换。", "Moves to host %s: the data is copied while the instance runs, then a short stop to switch."},
		"upgrade.unavailable": {"目前无法完成：%s", "Not possible right now: %s"},
		"upgrade.speed":       {"预计算力为当前的 %s 倍（按规格 BF16 算力）。", "Expected speed %s× of now (BF16 spec figures)."},
		"upgrade.academic":    {"已按学术价计算。", "Academic prices applied."},
		"upgrade.confirm":     {"确认变更", "Confirm the change"},
		"upgrade.confirm_q":   {"确认按此方案变更吗？新价格从新容器启动时开始计算。", "Make this change? The new price applies from the moment the new container starts."},
		"upgrade.change":      {"重新选择", "Choose again"},
		// Flashes after actions.
		"instance.done.stopped": {"已发出关机指令。", "The instance is stopping."},
		"instance.done.started": {"已发出开机指令。", "The instance is starting."},
		"instance.done.upgrade": {"变更已开始，进度见下方“进行中的操作”。", "The change has begun: see Operations below."},
		"instance.done.migrate": {"迁移已开始，进度见下方“进行中的操作”。", "The migration has begun: see Operations below."},
		"instance.done.verify":  {"验证已开始，完成后结果显示在下方。", "The verify run has begun; its results show below when done."},
		"instance.done.startup": {"启动命令已保存，下次开机时生效（运行中的实例请关机再开机）。", "The startup command is saved; it applies at the next start (stop and start a running instance to run it now)."},
		// The startup command and the logs panel.
		"startup.title":            {"启动命令", "Startup command"},
		"startup.command":          {"启动命令（可选）", "Startup command (optional)"},
		"startup.placeholder":      {"留空则运行镜像自带的命令，例如 python train.py", "Empty runs the image's own command; e.g. python train.py"},
		"startup.none_check":       {"开机时不运行任何命令（一台空机器，通过 SSH 使用）", "Run nothing at start (a bare machine to use over SSH)"},
		"startup.hint":             {"命令用 /bin/sh -c 运行；命令结束（无论退出码）实例都会继续运行，退出码和时间显示在实例页。", "It runs with /bin/sh -c; when it ends, whatever its exit code, the instance keeps running, and the code and time show on the instance page."},
		"startup.image_default":    {"镜像自带的入口和命令", "The image's own entrypoint and command"},
		"startup.none":             {"无（不运行命令）", "None (nothing runs)"},
		"startup.current":          {"当前设置", "Now set to"},
		"startup.status":           {"运行状态", "How it stands"},
		"startup.mode":             {"改为", "Change to"},
		"startup.mode.command":     {"下面的命令", "The command below"},
		"startup.mode.image":       {"镜像自带的命令", "The image's own command"},
		"startup.mode.none":        {"不运行命令", "No command"},
		"startup.save":             {"保存（下次开机生效）", "Save (applies at the next start)"},
		"startup.both":             {"已勾选“不运行任何命令”，请清空启动命令，或取消勾选。", "\"Run nothing\" is checked: clear the startup command, or uncheck it."},
		"startup.both_image":       {"选择了镜像自带的命令：请清空命令框，或选择“下面的命令”。", "The image's own command is chosen: clear the command, or choose \"The command below\"."},
		"startup.bad":              {"启动命令不能包含 NUL 字符，且须为 UTF-8 文本。", "The startup command must be UTF-8 text without NUL characters."},
		"startup.st.none":          {"未运行命令", "No command runs"},
		"startup.st.running":       {"运行中", "Running"},
		"startup.st.running_since": {"运行中，自 %s 起", "Running since %s"},
		"startup.st.exited":        {"已退出，退出码 %d，时间 %s（实例继续运行）", "Exited %d at %s (the instance keeps running)"},
		"startup.st.signal":        {"被信号 %s 结束，时间 %s（实例继续运行）", "Ended by signal %s at %s (the instance keeps running)"},
		"startup.st.failed":        {"无法启动：%s（实例继续运行；请修改启动命令）", "Could not be started: %s (the instance keeps running; change the startup command)"},
		"logs.title":               {"日志", "Logs"},
		"logs.hint":                {"启动命令的输出（最后 200 行），每 5 秒刷新一次。完整的流：gpurent logs -f。", "The startup command's output (the last 200 lines), refreshed every 5 s. The whole stream: gpurent logs -f."},
		"logs.refresh":             {"刷新", "Refresh"},
		"logs.loading":             {"正在读取…", "Loading…"},
		"logs.empty":               {"（还没有输出）", "(no output yet)"},
		"logs.not_found":           {"找不到该实例。", "Instance not found."},
		"logs.off":                 {"此控制面未开启 SSH 网关，无法读取日志。", "This control plane runs no SSH gateway: logs cannot be read."},
		"logs.not_running":         {"实例未在运行：日志在实例运行时从其主机读取。请先开机。", "The instance is not running: its logs are read from its host while it runs. Start it first."},
		"logs.failed":              {"读取日志失败：%s", "Could not read the logs: %s"},
		"instance.bad_port":        {"端口必须是 1 到 65535 之间的数字", "The port must be a number from 1 to 65535"},
		"instance.ports_off":       {"本平台未开启端口转发。", "This platform runs no port forwarding."},
		"instance.bad_type":        {"请选择 GPU 型号", "Choose a GPU type"},
	}
}

// flashKey is the message of the notice an action redirected with
// (?done=KEY): only a key on the list shows, anything else nothing.
func flashKey(prefix, done string) string {
	switch done {
	case "stopped", "started", "deleted", "upgrade", "migrate", "verify", "startup":
		return prefix + ".done." + done
	}
	return ""
}

// stateText is an instance state in the page's language.
func stateText(p *web.Page, st gpurent.InstanceState) string {
	key := "instance.state." + string(st)
	if p.Has(key) {
		return p.T(key)
	}
	return string(st)
}

// stateBadge is the badge class of a state: ok running, warn on the way,
// bad failed, plain stopped.
func stateBadge(st gpurent.InstanceState) string {
	switch st {
	case gpurent.StateRunning:
		return "ok"
	case gpurent.StatePending, gpurent.StateProvisioning, gpurent.StateStopping, gpurent.StateDeleting:
		return "warn"
	case gpurent.StateFailed:
		return "bad"
	}
	return ""
}

// planText is a plan in the page's language.
func planText(p *web.Page, plan gpurent.Plan) string {
	if plan == "" {
		plan = gpurent.PlanHourly
	}
	key := "instance.plan." + string(plan)
	if p.Has(key) {
		return p.T(key)
	}
	return string(plan)
}

// gpusText is "4 × h100-80g-sxm", or no-GPU mode.
func gpusText(p *web.Page, typeID string, count int) string {
	if count == 0 {
		return p.T("instance.no_gpu")
	}
	return strconv.Itoa(count) + " × " + typeID
}

// durationText shows a runway to the minute, largest units first:
// "3 d 4 h", "2 h 5 min", "12 min", "40 s".
func durationText(p *web.Page, seconds int64) string {
	switch d := time.Duration(seconds) * time.Second; {
	case d >= 24*time.Hour:
		return p.T("dur.dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
	case d >= time.Hour:
		return p.T("dur.hm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	case d >= time.Minute:
		return p.T("dur.m", int(d/time.Minute))
	}
	return p.T("dur.s", max(seconds, 0))
}
