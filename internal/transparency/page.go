package transparency

import (
	"bufio"
	"html/template"
	"io"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// The report's download addresses, linked from the page.
const (
	JSONPath = "/api/v1/transparency"
	CSVPath  = "/api/v1/transparency.csv"
)

// Page writes the report as a complete HTML page in lang: "zh"
// (Simplified Chinese) or "en", or a regional form of either such as
// zh-CN; any other is invalid. The page is self-contained (inline CSS, no
// script, no external asset) and links to the other language (?lang=) and
// to the JSON and CSV downloads. The verdict bands come from the report's
// PassRatio and WarnRatio (0.95 and 0.90 when left zero). Times are shown
// in Beijing time. It is written as it renders: the caller that must not
// send half a page on an error buffers w. The page needs no script and
// loads nothing, so it can be served with the SLA page's
// Content-Security-Policy (default-src 'none'; style-src 'unsafe-inline').
func Page(w io.Writer, t *apiv1.Transparency, lang string) error {
	l, ok := langOf(lang)
	if !ok {
		return gpurent.Errorf(gpurent.CodeInvalid, "lang must be %s or %s, got %q", LangEN, LangZH, lang)
	}
	if t == nil {
		return gpurent.Errorf(gpurent.CodeInternal, "no transparency report to render")
	}
	tmpl, err := template.New("transparency").Parse(pageTemplate)
	if err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "parsing the transparency page failed")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := tmpl.Execute(bw, newPageView(t, l)); err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "rendering the transparency page failed")
	}
	if err := bw.Flush(); err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "writing the transparency page failed")
	}
	return nil
}

// pageTemplate is the page. Its look follows the public SLA page.
const pageTemplate = `<!DOCTYPE html>
<html lang="{{.M.HTMLLang}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.M.Title}}</title>
<style>
body{font:16px/1.6 system-ui,-apple-system,"PingFang SC","Microsoft YaHei",sans-serif;color:#1d2330;background:#fff;margin:0}
main{max-width:80rem;margin:0 auto;padding:1.5rem}
nav{text-align:right;font-size:.9rem}
nav a{margin-left:1rem}
.banner{background:#fff4d6;border-bottom:2px solid #e0a100;color:#5c4400;font-weight:600;padding:.7rem 1.5rem;text-align:center}
h2{margin-top:2.5rem;border-bottom:1px solid #c9ced8}
h4{margin:1.5rem 0 .3rem}
.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem}
th,td{border:1px solid #c9ced8;padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:#f2f4f8;font-weight:600}
td.r,th.r{text-align:right}
.nw{white-space:nowrap}
code{background:#f2f4f8;padding:0 .2rem;border-radius:3px;font-size:.85em}
small,.note{color:#596275}
.b{display:inline-block;border-radius:3px;padding:0 .4rem;font-size:.85em;white-space:nowrap}
.b.pass{background:#dff3e4;color:#1b5e2b}
.b.warn{background:#fff1c7;color:#6b4d00}
.b.fail{background:#fbe0de;color:#8a1c12}
.b.info{background:#e1ecfb;color:#1d4a8a}
.b.muted{background:#eceef2;color:#596275}
td.pass{background:#f3fbf5}
td.warn{background:#fffae8}
td.fail{background:#fdf1f0}
td.muted{color:#8a92a3}
ol.src{font-size:.85rem;color:#596275}
table.hist{margin:.3rem 0;font-size:.8rem}
table.hist td,table.hist th{padding:.1rem .4rem;white-space:nowrap}
table.hist td:nth-child(n+4),table.hist th:nth-child(n+4){text-align:right}
details summary{cursor:pointer;white-space:nowrap}
footer{margin-top:2rem;font-size:.9rem;color:#596275}
</style>
</head>
<body>
{{if .Synthetic}}<div class="banner" role="alert">{{.M.Synthetic}}</div>
{{end}}<main>
<nav><a href="?lang={{.M.OtherLang}}" hreflang="{{.M.OtherLang}}">{{.M.OtherLabel}}</a><a href="{{.JSONPath}}" type="application/json">{{.M.JSON}}</a><a href="{{.CSVPath}}" type="text/csv">{{.M.CSV}}</a></nav>
<h1>{{.M.Title}}</h1>
<p>{{.M.Intro}}</p>
<p class="note">{{.Generated}}</p>
<h2 id="method">{{.M.MethodHeading}}</h2>
<p>{{.M.Method1}} {{.Method2}}</p>
<p class="note">{{.M.HashNote}} {{.M.RatioNote}} {{.M.StarNote}}</p>
{{if .Notes}}<h3>{{.M.NotesHeading}}</h3>
<ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{if .Types}}<p>{{.M.Contents}}{{range $i, $t := .Types}}{{if $i}} · {{end}}<a href="#{{.Anchor}}">{{.Name}}</a>{{end}} · <a href="#delisted">{{.M.DelistedHead}}</a></p>
{{end}}{{range $t := .Types}}
<section id="{{.Anchor}}">
<h2>{{.Name}} <small><code>{{.ID}}</code></small></h2>
<h3>{{$.M.TypeCounts}}</h3>
<div class="scroll"><table><tr>{{range .Counts}}<th>{{.Label}}</th>{{end}}</tr>
<tr>{{range .Counts}}<td class="r">{{.N}}</td>{{end}}</tr></table></div>
<h3>{{$.M.ProbesHead}}</h3>
{{if .Probes}}<div class="scroll"><table>
<thead><tr><th>{{$.M.ColProbe}}</th><th>{{$.M.ColUnit}}</th><th class="r">{{$.M.ColSpec}}</th><th class="r">{{$.M.ColHealthy}}</th><th class="r">{{$.M.ColMedian}}</th><th class="r">{{$.M.ColRange}}</th><th class="r">{{$.M.ColCards}}</th><th>{{$.M.ColBand}}</th><th class="r">{{$.M.ColSpecRatio}}</th></tr></thead>
<tbody>
{{range .Probes}}<tr><td>{{.Label}}{{if .Setup}}<br><small>{{.Setup}}</small>{{end}}{{if .PerMeasure}}<br><small>{{.PerMeasure}}</small>{{end}}</td><td>{{.Unit}}</td><td class="r">{{if .SpecNote}}<span title="{{.SpecSource}}">{{.Spec}}</span><sup><a href="#{{.SpecNoteID}}">{{.SpecNote}}</a></sup>{{else}}{{.Spec}}{{end}}</td><td class="r">{{if .HealthyNote}}<span title="{{.HealthySource}}">{{.Healthy}}</span><sup><a href="#{{.HealthyNoteID}}">{{.HealthyNote}}</a></sup>{{else}}{{.Healthy}}{{end}}</td><td class="r">{{.Median}}</td><td class="r">{{.Range}}</td><td class="r">{{.Cards}}</td><td>{{.Band}}</td><td class="r">{{.SpecRatio}}</td></tr>
{{end}}</tbody></table></div>
{{if .Sources}}<p class="note">{{$.M.Sources}}</p>
<ol class="src">{{range .Sources}}<li id="{{.ID}}">{{.Text}}</li>{{end}}</ol>
{{end}}{{else}}<p class="note">{{$.M.NoProbes}}</p>
{{end}}<h3>{{$.M.HostsHead}}</h3>
{{range .Hosts}}<h4>{{.Name}} <small>{{$.M.Zone}}{{.Zone}} · <code>{{.ID}}</code></small></h4>
<div class="scroll"><table>
<thead><tr><th>{{$.M.ColGPU}}</th><th class="r nw">{{$.M.ColIndex}}</th><th class="nw">{{$.M.ColState}}</th>{{if $t.PriceCol}}<th class="nw">{{$.M.ColPrice}}</th>{{end}}<th class="nw">{{$.M.ColLastRun}}</th>{{range $t.Columns}}<th class="r"{{if .Setup}} title="{{.Setup}}"{{end}}>{{.Label}}{{if .ShowSetup}}<br><small>{{.Setup}}</small>{{end}}<br><small>{{.Unit}}</small></th>{{end}}<th>{{$.M.ColThrottle}}</th><th>{{$.M.ColHistory}}</th></tr></thead>
<tbody>
{{.Rows}}</tbody></table></div>
{{else}}<p class="note">{{$.M.NoHosts}}</p>
{{end}}</section>
{{end}}
<section id="delisted">
<h2>{{.M.DelistedHead}}</h2>
{{if .Delisted}}<div class="scroll"><table>
<thead><tr><th>{{.M.ColGPU}}</th><th>{{.M.ColType}}</th><th>{{.M.ColHost}}</th><th>{{.M.ColState}}</th><th>{{.M.ColPrice}}</th><th>{{.M.ColSince}}</th><th>{{.M.ColReason}}</th></tr></thead>
<tbody>
{{range .Delisted}}<tr><td><code>{{.Hash}}</code></td><td>{{.Type}}</td><td>{{.Host}}</td><td><span class="b {{.StateClass}}">{{.State}}</span></td><td>{{.Price}}</td><td>{{.Since}}</td><td>{{.Reason}}</td></tr>
{{end}}</tbody></table></div>
{{else}}<p>{{.M.NoneDelisted}}</p>
{{end}}</section>
<footer>{{.M.DownloadsTo}} <a href="{{.JSONPath}}" type="application/json">{{.M.JSON}}</a> · <a href="{{.CSVPath}}" type="text/csv">{{.M.CSV}}</a></footer>
</main>
</body>
</html>
`
