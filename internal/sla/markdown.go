package sla

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/money"
)

// The figures of the page's worked examples. They illustrate the rules; the
// amounts shown are computed by the functions of this package.
const (
	examplePerGPUFen = 521    // an RTX 4090's hourly list price
	exampleGPUs      = 2      // GPUs affected by the example failure
	exampleMonthFen  = 300000 // an instance's monthly charge: 3,000 CNY
)

// Markdown renders the public SLA page for the terms in lang: "zh" (any tag
// starting with "zh") for Simplified Chinese, anything else for English.
// The terms should be valid (Validate); the page states them as they are.
func (t Terms) Markdown(lang string) string {
	var p page
	if strings.HasPrefix(strings.ToLower(lang), "zh") {
		p = zhPage(t)
	} else {
		p = enPage(t)
	}
	return p.render(t)
}

// page holds one language's words; render lays them out with the numbers.
type page struct {
	title, intro          string
	downH                 string
	down                  []string
	neverH                string
	never                 []string
	incidentH, incident   string
	formula, exampleIntro string
	examples              []string
	incidentNote          string
	tierH, tierIntro      string
	tierHead              [3]string
	tierRow               func(below string) string
	tierNote, noTiers     string
	limitsH               string
	limits                []string
	autoH                 string
	auto                  []string
	excludedH             string
	excluded              map[Exclusion]string
	timeH, timeText       string
	money                 func(fen int64) string
}

func (p page) render(t Terms) string {
	var b strings.Builder
	para := func(s string) { b.WriteString(s + "\n\n") }
	list := func(items []string) {
		for _, it := range items {
			b.WriteString("- " + it + "\n")
		}
		b.WriteString("\n")
	}
	para("# " + p.title)
	para(p.intro)
	para("## " + p.downH)
	for _, s := range p.down {
		para(s)
	}
	para("## " + p.neverH)
	list(p.never)
	para("## " + p.incidentH)
	para(p.incident)
	para("    " + p.formula)
	para(p.exampleIntro)
	list(p.examples)
	para(p.incidentNote)
	para("## " + p.tierH)
	if len(t.Tiers) == 0 {
		para(p.noTiers)
	} else {
		para(p.tierIntro)
		fmt.Fprintf(&b, "| %s | %s | %s |\n|---|---:|---:|\n", p.tierHead[0], p.tierHead[1], p.tierHead[2])
		for _, tier := range t.Tiers {
			fmt.Fprintf(&b, "| %s | %d%% | %s |\n", p.tierRow(percentBP(tier.BelowBasisPoints)),
				tier.CreditPercent, p.money(percentOf(exampleMonthFen, tier.CreditPercent)))
		}
		b.WriteString("\n")
		first := t.Tiers[0].BelowBasisPoints
		just := fmt.Sprintf("%d.%02d99", (first-1)/100, (first-1)%100)
		para(fmt.Sprintf(p.tierNote, just, percentBP(first)))
	}
	para("## " + p.limitsH)
	list(p.limits)
	para("## " + p.autoH)
	list(p.auto)
	para("## " + p.excludedH)
	var ex []string
	for _, e := range t.Exclusions {
		if s, ok := p.excluded[e]; ok {
			ex = append(ex, s)
		}
	}
	list(ex)
	para("## " + p.timeH)
	b.WriteString(p.timeText + "\n")
	return b.String()
}

// example holds the worked examples' numbers, computed with the terms.
type example struct {
	hourlyFen                int64
	shortHours               int    // whole hours of the short example
	shortFen, longFen        int64  // the two incident credits
	longHours                int    // hours since power-on in the long example
	downStart, downEnd       string // an outage that voids its hour
	voidedHour               string // that hour, "14:00–15:00"
	exactlyStart, exactlyEnd string // an outage of exactly the threshold
}

func examples(t Terms) example {
	loc := time.FixedZone("example", 0) // clock faces only; no zone is implied
	on := time.Date(2025, 3, 3, 9, 0, 0, 0, loc)
	hourly := int64(examplePerGPUFen * exampleGPUs)
	shortHours := min(3, max(t.IncidentCreditMaxHours-1, 0))
	short := time.Duration(shortHours)*time.Hour + 20*time.Minute
	longHours := t.IncidentCreditMaxHours + 6
	h := time.Date(2025, 3, 3, 14, 0, 0, 0, loc)
	clock := func(x time.Time) string { return x.Format("15:04") }
	return example{
		hourlyFen:    hourly,
		shortHours:   shortHours,
		shortFen:     IncidentCredit(t, on, on.Add(short), hourly),
		longFen:      IncidentCredit(t, on, on.Add(time.Duration(longHours)*time.Hour), hourly),
		longHours:    longHours,
		downStart:    clock(h),
		downEnd:      clock(h.Add(time.Duration(t.HourRuleMinutes+1) * time.Minute)),
		voidedHour:   clock(h) + "–" + clock(h.Add(time.Hour)),
		exactlyStart: clock(h.Add(20 * time.Minute)),
		exactlyEnd:   clock(h.Add(time.Duration(20+t.HourRuleMinutes) * time.Minute)),
	}
}

func enPage(t Terms) page {
	x := examples(t)
	yuan := func(fen int64) string { return money.Number(fen) + " CNY" }
	never := []string{"The seconds your instance is down are never billed."}
	if t.HourRuleMinutes == 0 {
		never = append(never, fmt.Sprintf("**Hour rule.** A clock hour in which your instance was down at all is not charged at all. For example, down from %s to %s: the whole %s hour is free.",
			x.downStart, x.downEnd, x.voidedHour))
	} else {
		never = append(never, fmt.Sprintf("**Hour rule.** A clock hour in which your instance was down for more than %s in total is not charged at all. For example, down from %s to %s (%s): the whole %s hour is free. Down for exactly %s in an hour (say %s to %s): those %s are free and the rest of the hour is charged.",
			enCount(t.HourRuleMinutes, "minute"), x.downStart, x.downEnd, enCount(t.HourRuleMinutes+1, "minute"), x.voidedHour,
			enCount(t.HourRuleMinutes, "minute"), x.exactlyStart, x.exactlyEnd, enCount(t.HourRuleMinutes, "minute")))
	}
	down := []string{"Your instance is down while a fault attributed to the platform affects it: a GPU failure (an Xid that needs a reset, a GPU that fell off the bus, uncorrectable memory errors), a server failure, or the server's agent falling silent."}
	if t.DegradedCountsAsDown {
		down = append(down, "A degraded GPU counts as down too: throttling, a PCIe or NVLink link or power limit below specification, or a failed benchmark.")
	}
	p := page{
		title:     "Service level agreement (SLA)",
		intro:     "When one of our GPUs or servers fails, you are not charged for the time lost, and you are credited automatically: no ticket, no claim. This page is rendered from the same terms the billing system applies.",
		downH:     "What counts as down",
		down:      down,
		neverH:    "Down time is never charged",
		never:     never,
		incidentH: "Incident credit",
		incident: fmt.Sprintf("When a GPU or server failure interrupts your instance, you are credited the hourly price of the affected GPUs for the time since the instance was last powered on, up to %s:",
			enCount(t.IncidentCreditMaxHours, "hour")),
		formula:      fmt.Sprintf("credit = min(time since last power-on, %d h) × hourly price of the affected GPUs", t.IncidentCreditMaxHours),
		exampleIntro: fmt.Sprintf("For example, with %d GPUs at %s per GPU-hour (%s per hour):", exampleGPUs, yuan(examplePerGPUFen), yuan(x.hourlyFen)),
		examples: []string{
			fmt.Sprintf("powered on at 09:00, failure at %s (%d h 20 min): %s.", fmt.Sprintf("%02d:20", 9+x.shortHours), x.shortHours, yuan(x.shortFen)),
			fmt.Sprintf("powered on %s before the failure: %d × %s = %s.", enCount(x.longHours, "hour"), t.IncidentCreditMaxHours, yuan(x.hourlyFen), yuan(x.longFen)),
		},
		incidentNote: "A degradation does not interrupt your instance: it counts as down time but earns no incident credit.",
		tierH:        "Monthly availability credit",
		tierIntro:    "Availability is the share of the time in a calendar month that your instance was meant to be running (from each start you asked for to each stop you asked for) during which it was not down. When it falls below a threshold, you are credited a share of that instance's charges for the month:",
		tierHead:     [3]string{"Monthly availability", "Credit", "On a " + yuan(exampleMonthFen) + " month"},
		tierRow:      func(below string) string { return "below " + below + "%" },
		tierNote:     "Only the best tier that applies is credited; tiers do not add up. Availability is rounded down to 0.01%%, so %s%% counts as below %s%%. An instance that was never meant to be running in the month has 100%% availability.",
		noTiers:      "There is no monthly availability credit.",
		limitsH:      "Limits",
		limits: []string{
			fmt.Sprintf("Credits for one instance in one calendar month never exceed %d%% of that instance's charges in that month.", t.CapPercent),
			fmt.Sprintf("Credits are not cash: they pay for your future usage and cannot be withdrawn or transferred. Each credit expires %s after it is posted.", enCount(t.ExpiryDays, "day")),
		},
		autoH: "Automatic and itemised",
		auto: []string{
			fmt.Sprintf("An incident's credit is posted automatically within %s after the incident ends; you need not ask.", enCount(t.PostWithinMinutes, "minute")),
			"Each incident is credited once, as its own line on your statement with the fault, its cause and its times.",
			"The monthly availability credit is posted after the month ends.",
		},
		excludedH: "Not covered",
		excluded: map[Exclusion]string{
			ExclusionTenantFault:          "Faults caused by your own program (application errors such as Xid 13, 31 or 43): you are told about them, they are billed as usual and not credited.",
			ExclusionAnnouncedMaintenance: fmt.Sprintf("Maintenance announced at least %s ahead.", enCount(t.MaintenanceNoticeHours, "hour")),
		},
		timeH:    "Time and money",
		timeText: "Clock hours and calendar months are those of China Standard Time (" + Zone + "). Amounts are in fen (0.01 CNY); each credit is computed exactly and rounded half-up to the fen once.",
		money:    yuan,
	}
	return p
}

func zhPage(t Terms) page {
	x := examples(t)
	yuan := func(fen int64) string { return money.Number(fen) + " 元" }
	never := []string{"实例不可用的每一秒都不计费。"}
	if t.HourRuleMinutes == 0 {
		never = append(never, fmt.Sprintf("**整小时规则。** 在一个整点小时内，实例只要出现不可用，该小时全部免费。例如 %s 至 %s 不可用：%s 整个小时免费。",
			x.downStart, x.downEnd, x.voidedHour))
	} else {
		never = append(never, fmt.Sprintf("**整小时规则。** 在一个整点小时内，实例累计不可用超过 %d 分钟，该小时全部免费。例如 %s 至 %s 不可用（%d 分钟）：%s 整个小时免费。一个小时内恰好不可用 %d 分钟（如 %s 至 %s）：仅这 %d 分钟免费，该小时其余时间照常计费。",
			t.HourRuleMinutes, x.downStart, x.downEnd, t.HourRuleMinutes+1, x.voidedHour,
			t.HourRuleMinutes, x.exactlyStart, x.exactlyEnd, t.HourRuleMinutes))
	}
	down := []string{"由平台方原因引起的故障影响您的实例期间，实例即为不可用：GPU 故障（需要重置的 Xid、GPU 掉卡、不可纠正的显存错误）、服务器故障，或服务器代理失联。"}
	if t.DegradedCountsAsDown {
		down = append(down, "GPU 性能降级同样算作不可用：降频、PCIe 或 NVLink 链路或功率低于规格，或基准测试不达标。")
	}
	p := page{
		title:     "服务等级协议（SLA）",
		intro:     "当我们的 GPU 或服务器发生故障时，损失的时间不计费，补偿自动发放：无需提交工单，无需申请。本页由计费系统实际执行的同一份条款生成。",
		downH:     "什么算作不可用",
		down:      down,
		neverH:    "不可用时间从不计费",
		never:     never,
		incidentH: "故障补偿",
		incident: fmt.Sprintf("GPU 或服务器故障中断您的实例时，按受影响 GPU 的小时价格，补偿自实例最近一次开机以来的时长，最多 %d 小时：",
			t.IncidentCreditMaxHours),
		formula:      fmt.Sprintf("补偿 = min(自最近一次开机以来的时长, %d 小时) × 受影响 GPU 的小时价格", t.IncidentCreditMaxHours),
		exampleIntro: fmt.Sprintf("例如，%d 块 GPU，每卡每小时 %s（合计每小时 %s）：", exampleGPUs, yuan(examplePerGPUFen), yuan(x.hourlyFen)),
		examples: []string{
			fmt.Sprintf("09:00 开机，%s 故障（%d 小时 20 分钟）：补偿 %s。", fmt.Sprintf("%02d:20", 9+x.shortHours), x.shortHours, yuan(x.shortFen)),
			fmt.Sprintf("故障前 %d 小时开机：%d × %s = %s。", x.longHours, t.IncidentCreditMaxHours, yuan(x.hourlyFen), yuan(x.longFen)),
		},
		incidentNote: "性能降级不会中断实例：计入不可用时间，但不产生故障补偿。",
		tierH:        "月度可用性补偿",
		tierIntro:    "可用性是指在一个自然月中，实例应在运行的时间（从您每次启动到您每次停止）里未处于不可用状态的比例。低于阈值时，按该实例当月费用的相应比例补偿：",
		tierHead:     [3]string{"月度可用性", "补偿比例", "当月费用为 " + money.Number(exampleMonthFen) + " 元时"},
		tierRow:      func(below string) string { return "低于 " + below + "%" },
		tierNote:     "只按适用的最高一档补偿，各档不累加。可用性向下取整到 0.01%%，因此 %s%% 算作低于 %s%%。当月没有应在运行时间的实例，可用性为 100%%。",
		noTiers:      "不提供月度可用性补偿。",
		limitsH:      "上限与有效期",
		limits: []string{
			fmt.Sprintf("同一实例在一个自然月内获得的补偿总额，不超过该实例当月费用的 %d%%。", t.CapPercent),
			fmt.Sprintf("补偿不是现金：用于抵扣您之后的费用，不可提现或转让。每笔补偿自发放之日起 %d 天后过期。", t.ExpiryDays),
		},
		autoH: "自动、逐项发放",
		auto: []string{
			fmt.Sprintf("故障结束后 %d 分钟内自动发放故障补偿，无需申请。", t.PostWithinMinutes),
			"每次故障只补偿一次，在账单中单列一行，注明故障、原因与起止时间。",
			"月度可用性补偿在当月结束后发放。",
		},
		excludedH: "不在补偿范围内",
		excluded: map[Exclusion]string{
			ExclusionTenantFault:          "由您自己的程序引起的故障（例如 Xid 13、31、43 等应用错误）：会通知您，照常计费，不予补偿。",
			ExclusionAnnouncedMaintenance: fmt.Sprintf("提前至少 %d 小时公告的维护。", t.MaintenanceNoticeHours),
		},
		timeH:    "时间与金额",
		timeText: "整点小时与自然月均按北京时间（" + Zone + "）计算。金额以分（0.01 元）为单位；每笔补偿精确计算后，只四舍五入到分一次。",
		money:    yuan,
	}
	return p
}

// enCount writes "1 minute", "6 minutes".
func enCount(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// percentBP writes basis points as a percentage with at least one decimal:
// 9950 → "99.5", 9900 → "99.0", 9525 → "95.25".
func percentBP(bp int) string {
	s := fmt.Sprintf("%d.%02d", bp/100, bp%100)
	return strings.TrimSuffix(s, "0")
}
