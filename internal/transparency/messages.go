package transparency

import "strings"

// The page's languages.
const (
	LangEN = "en"
	LangZH = "zh"
)

// The probes the report knows by name (the benchjudge package's probe ids;
// kept here as strings so that this package imports no domain logic).
const (
	probeGEMMBF16      = "gemm_bf16"
	probeGEMMFP8       = "gemm_fp8"
	probeCopyD2D       = "copy_d2d"
	probeCopyH2D       = "copy_h2d"
	probeCopyD2H       = "copy_d2h"
	probeP2P           = "p2p_bw"
	probeResNet50      = "resnet50_amp"
	probeNCCLAllReduce = "nccl_allreduce"
)

// messages is every string of the page's interface in one language. Both
// tables fill every field (a test holds them to it); formats take the
// arguments named in their comments, in that order.
type messages struct {
	HTMLLang    string // the html lang attribute
	Title       string
	Intro       string
	OtherLang   string // the language the switch link goes to
	OtherLabel  string // its name, in that language
	DownloadsTo string
	JSON        string
	CSV         string
	Synthetic   string // the banner over demo data
	Generated   string // format: the time
	Contents    string

	MethodHeading string
	Method1       string
	Method2       string // format: pass, warn, pass, warn (percentages)
	HashNote      string
	RatioNote     string
	StarNote      string
	NotesHeading  string

	// Per type.
	TypeCounts   string
	CountGPUs    string
	Certified    string
	Warn         string
	Pending      string
	Degraded     string
	Delisted     string
	Uncertified  string
	ProbesHead   string
	ColProbe     string
	ColUnit      string
	ColSpec      string
	ColHealthy   string
	ColMedian    string
	ColRange     string
	ColCards     string
	ColBand      string
	ColSpecRatio string
	Band         string // format: pass threshold, fail threshold
	PerMeasure   string // format: GPUs per measurement
	Sources      string
	NoProbes     string
	NoHosts      string

	// Per host.
	HostsHead   string
	Zone        string
	ColGPU      string
	ColIndex    string
	ColState    string
	ColPrice    string
	PriceOfList string // format: the share
	ColLastRun  string
	ColThrottle string
	ColHistory  string
	Runs        string // format: count (earlier runs)
	HistDate    string
	HistTrigger string
	HistVerdict string
	CellTitle   string // format: outcome, runs, min, max
	NotRun      string
	NoResults   string
	Provisional string

	// Delisted and degraded cards.
	DelistedHead string
	ColType      string
	ColHost      string
	ColSince     string
	ColReason    string
	NoneDelisted string

	// Certification states, outcomes and job reasons.
	StateUncertified string
	StateCertified   string
	StateWarn        string
	StateRerun       string
	StateDelisted    string
	StateDegraded    string
	StateSynthetic   string
	OutcomePass      string
	OutcomeWarn      string
	OutcomeFail      string
	OutcomeShort     string // INSUFFICIENT
	ReasonOnboarding string
	ReasonWeekly     string
	ReasonAfterFault string
	ReasonRelist     string
	ReasonRerun      string
	ReasonManual     string
	ReasonVerify     string

	// Probe labels.
	ProbeGEMMBF16 string
	ProbeGEMMFP8  string
	ProbeCopyD2D  string
	ProbeCopyH2D  string
	ProbeCopyD2H  string
	ProbeP2P      string
	ProbeResNet50 string
	ProbeNCCL     string
}

// langOf maps a language tag (en, zh, or a regional form such as zh-CN)
// to a page language.
func langOf(tag string) (string, bool) {
	primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
	switch primary {
	case LangEN, LangZH:
		return primary, true
	}
	return "", false
}

// messagesFor is the table of lang (a page language; English otherwise).
func messagesFor(lang string) *messages {
	if lang == LangZH {
		return messagesZH()
	}
	return messagesEN()
}

func messagesEN() *messages {
	return &messages{
		HTMLLang:    "en",
		Title:       "Compute transparency report",
		Intro:       "Measured benchmark figures of every GPU we rent, set against the official spec and against the fleet median of its type. Nothing here is a theoretical figure passed off as a measurement.",
		OtherLang:   LangZH,
		OtherLabel:  "中文",
		DownloadsTo: "Download the data:",
		JSON:        "JSON",
		CSV:         "CSV",
		Synthetic:   "Demo data: these figures come from simulated GPUs, not from measurements.",
		Generated:   "Generated %s (Beijing time, UTC+8).",
		Contents:    "GPU types: ",

		MethodHeading: "Method",
		Method1:       "Each card is benchmarked while idle: after a warm-up run, every probe runs at least five times and the card's figure is the median of those runs.",
		Method2:       "A card passes at %s of the fleet median of its type, probe and setup or above, is flagged with a warning from %s up to %s, and fails below %s, but only once a re-run confirms the failure; the ratio to the official spec is shown beside the verdict and never used to judge.",
		HashNote:      "A GPU is named by the first 16 hex digits of the SHA-256 of its UUID. Dates are Beijing time.",
		RatioNote:     "Percentages are truncated to one decimal, so a card shown at 94.9% did not reach 95%.",
		StarNote:      "An asterisk marks a provisional fail, held for a re-run.",
		NotesHeading:  "Notes",

		TypeCounts:   "Cards by certification",
		CountGPUs:    "GPUs",
		Certified:    "Certified",
		Warn:         "Warning",
		Pending:      "Awaiting re-run",
		Degraded:     "Degraded (discounted)",
		Delisted:     "Delisted",
		Uncertified:  "Not yet certified",
		ProbesHead:   "Fleet figures by probe",
		ColProbe:     "Probe",
		ColUnit:      "Unit",
		ColSpec:      "Official spec (dense)",
		ColHealthy:   "Healthy card",
		ColMedian:    "Fleet median",
		ColRange:     "Lowest – highest card",
		ColCards:     "Cards",
		ColBand:      "Verdict band",
		ColSpecRatio: "Fleet median / spec",
		Band:         "pass ≥ %s, fail < %s",
		PerMeasure:   "%d GPUs per measurement",
		Sources:      "Sources:",
		NoProbes:     "No card of this type has been measured yet.",
		NoHosts:      "No host has a card of this type.",

		HostsHead:   "Hosts and cards",
		Zone:        "Zone: ",
		ColGPU:      "GPU",
		ColIndex:    "Index",
		ColState:    "Certification",
		ColPrice:    "Price",
		PriceOfList: "%s of list",
		ColLastRun:  "Last run",
		ColThrottle: "Throttling",
		ColHistory:  "Earlier runs",
		Runs:        "%d runs",
		HistDate:    "Date",
		HistTrigger: "Why it ran",
		HistVerdict: "Verdict",
		CellTitle:   "%s; %d runs, lowest %s, highest %s",
		NotRun:      "never",
		NoResults:   "not measured yet",
		Provisional: "provisional: held for a re-run",

		DelistedHead: "Delisted and degraded cards",
		ColType:      "Type",
		ColHost:      "Host",
		ColSince:     "Since",
		ColReason:    "Why",
		NoneDelisted: "No card is delisted or degraded.",

		StateUncertified: "Not certified",
		StateCertified:   "Certified",
		StateWarn:        "Warning",
		StateRerun:       "Awaiting re-run",
		StateDelisted:    "Delisted",
		StateDegraded:    "Degraded",
		StateSynthetic:   "Simulated",
		OutcomePass:      "Pass",
		OutcomeWarn:      "Warning",
		OutcomeFail:      "Fail",
		OutcomeShort:     "Too few runs",
		ReasonOnboarding: "first run",
		ReasonWeekly:     "scheduled",
		ReasonAfterFault: "after a fault",
		ReasonRelist:     "before relisting",
		ReasonRerun:      "re-run",
		ReasonManual:     "operator",
		ReasonVerify:     "customer check",

		ProbeGEMMBF16: "BF16 GEMM",
		ProbeGEMMFP8:  "FP8 GEMM",
		ProbeCopyD2D:  "Device memory copy",
		ProbeCopyH2D:  "Host → device copy",
		ProbeCopyD2H:  "Device → host copy",
		ProbeP2P:      "Peer-to-peer (P2P) copy",
		ProbeResNet50: "ResNet-50 training (AMP)",
		ProbeNCCL:     "NCCL all-reduce bus bandwidth",
	}
}

func messagesZH() *messages {
	return &messages{
		HTMLLang:    "zh-CN",
		Title:       "算力透明度报告",
		Intro:       "我们出租的每一张 GPU 的实测基准数据，与官方规格及同型号集群中位数逐项对照。这里没有把理论值当作实测值的数字。",
		OtherLang:   LangEN,
		OtherLabel:  "English",
		DownloadsTo: "下载数据：",
		JSON:        "JSON 格式",
		CSV:         "CSV 表格",
		Synthetic:   "演示数据：以下数字来自模拟 GPU，并非实测结果。",
		Generated:   "生成于 %s（北京时间）。",
		Contents:    "GPU 型号：",

		MethodHeading: "测试方法",
		Method1:       "每张卡在空闲时测试：先预热一次，再将每个测试项至少运行五次，取这些运行的中位数作为该卡的成绩。",
		Method2:       "成绩达到同型号、同测试项、同配置集群中位数的 %s 及以上为通过，%s 至 %s 之间为警告，低于 %s 为不合格，但不合格须经复测确认；与官方规格的比值只作展示，不参与判定。",
		HashNote:      "GPU 以其 UUID 的 SHA-256 前 16 位十六进制数命名。日期均为北京时间。",
		RatioNote:     "百分比向下截断到一位小数，显示 94.9% 的卡未达到 95%。",
		StarNote:      "星号（*）表示初判不合格，待复测确认。",
		NotesHeading:  "说明",

		TypeCounts:   "按认证状态统计",
		CountGPUs:    "卡数",
		Certified:    "已认证",
		Warn:         "警告",
		Pending:      "待复测",
		Degraded:     "降级（折价出租）",
		Delisted:     "已下架",
		Uncertified:  "尚未认证",
		ProbesHead:   "各测试项的集群数据",
		ColProbe:     "测试项",
		ColUnit:      "单位",
		ColSpec:      "官方规格（稠密）",
		ColHealthy:   "健康卡参考值",
		ColMedian:    "集群中位数",
		ColRange:     "最低 – 最高",
		ColCards:     "卡数",
		ColBand:      "判定区间",
		ColSpecRatio: "中位数 / 规格",
		Band:         "通过 ≥ %s，不合格 < %s",
		PerMeasure:   "每次测量 %d 张卡",
		Sources:      "数据来源：",
		NoProbes:     "该型号尚无实测数据。",
		NoHosts:      "暂无主机配有该型号。",

		HostsHead:   "主机与显卡",
		Zone:        "可用区：",
		ColGPU:      "显卡",
		ColIndex:    "序号",
		ColState:    "认证状态",
		ColPrice:    "价格",
		PriceOfList: "标价的 %s",
		ColLastRun:  "最近测试",
		ColThrottle: "降频原因",
		ColHistory:  "历史测试",
		Runs:        "%d 次",
		HistDate:    "日期",
		HistTrigger: "触发原因",
		HistVerdict: "结论",
		CellTitle:   "%s；%d 次运行，最低 %s，最高 %s",
		NotRun:      "从未",
		NoResults:   "尚未测试",
		Provisional: "初判，待复测确认",

		DelistedHead: "已下架及降级的显卡",
		ColType:      "型号",
		ColHost:      "主机",
		ColSince:     "起始时间",
		ColReason:    "原因",
		NoneDelisted: "目前没有下架或降级的显卡。",

		StateUncertified: "未认证",
		StateCertified:   "已认证",
		StateWarn:        "警告",
		StateRerun:       "待复测",
		StateDelisted:    "已下架",
		StateDegraded:    "降级",
		StateSynthetic:   "模拟",
		OutcomePass:      "通过",
		OutcomeWarn:      "警告",
		OutcomeFail:      "不合格",
		OutcomeShort:     "运行次数不足",
		ReasonOnboarding: "首次测试",
		ReasonWeekly:     "定期复测",
		ReasonAfterFault: "故障后",
		ReasonRelist:     "重新上架前",
		ReasonRerun:      "复测",
		ReasonManual:     "运维发起",
		ReasonVerify:     "用户自检",

		ProbeGEMMBF16: "BF16 矩阵乘",
		ProbeGEMMFP8:  "FP8 矩阵乘",
		ProbeCopyD2D:  "显存内拷贝",
		ProbeCopyH2D:  "主机 → 显卡拷贝",
		ProbeCopyD2H:  "显卡 → 主机拷贝",
		ProbeP2P:      "卡间点对点（P2P）拷贝",
		ProbeResNet50: "ResNet-50 训练（AMP 混合精度）",
		ProbeNCCL:     "NCCL all-reduce 总线带宽",
	}
}

// ProbeLabel is a probe's human name in lang ("en" or "zh", English for
// any other), and the probe id itself for a probe it does not know.
func ProbeLabel(probe, lang string) string {
	l, _ := langOf(lang)
	return messagesFor(l).probe(probe)
}

func (m *messages) probe(probe string) string {
	switch probe {
	case probeGEMMBF16:
		return m.ProbeGEMMBF16
	case probeGEMMFP8:
		return m.ProbeGEMMFP8
	case probeCopyD2D:
		return m.ProbeCopyD2D
	case probeCopyH2D:
		return m.ProbeCopyH2D
	case probeCopyD2H:
		return m.ProbeCopyD2H
	case probeP2P:
		return m.ProbeP2P
	case probeResNet50:
		return m.ProbeResNet50
	case probeNCCLAllReduce:
		return m.ProbeNCCL
	}
	return probe
}

// state is a certification state's label and its badge class.
func (m *messages) state(s string) (label, class string) {
	switch s {
	case "certified":
		return m.StateCertified, "pass"
	case "warn":
		return m.StateWarn, "warn"
	case "rerun":
		return m.StateRerun, "warn"
	case "delisted":
		return m.StateDelisted, "fail"
	case "degraded":
		return m.StateDegraded, "fail"
	case "synthetic":
		return m.StateSynthetic, "info"
	case "uncertified", "":
		return m.StateUncertified, "muted"
	}
	return s, "muted"
}

// outcome is a verdict's label and its class.
func (m *messages) outcome(o string) (label, class string) {
	switch o {
	case "PASS":
		return m.OutcomePass, "pass"
	case "WARN":
		return m.OutcomeWarn, "warn"
	case "FAIL":
		return m.OutcomeFail, "fail"
	case "INSUFFICIENT":
		return m.OutcomeShort, "muted"
	}
	return o, "muted"
}

// reason is a benchmark job reason's label.
func (m *messages) reason(r string) string {
	switch r {
	case "onboarding":
		return m.ReasonOnboarding
	case "weekly":
		return m.ReasonWeekly
	case "after_fault":
		return m.ReasonAfterFault
	case "relist":
		return m.ReasonRelist
	case "rerun":
		return m.ReasonRerun
	case "manual":
		return m.ReasonManual
	case "verify":
		return m.ReasonVerify
	}
	return r
}
