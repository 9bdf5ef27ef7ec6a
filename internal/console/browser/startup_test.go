package browser

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rental"
)

// TestStartupCommandAndLogsPanel: the rent form's startup command reaches
// the instance; the instance page shows it, changes it (applying at the
// next start, as it says) and refuses a bad change in the page's
// language; the logs panel of the running instance asks the control
// plane for the output and shows its answer.
func TestStartupCommandAndLogsPanel(t *testing.T) {
	st := startSite(t)
	bg := context.Background()
	ctx := browser(t)
	email := "startup@lab.example"
	signup(t, ctx, st.url, email, "启动命令", "startup-password-1", "zh")
	acc, err := st.s.Store.AccountByEmail(bg, email)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.s.Wallet.Credit(bg, st.ops, acc.ID, 500_000, "startup", "startup-topup"); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "fill the rent form with a startup command",
		nav(st.url+"/rent?lang=zh"),
		chromedp.WaitVisible(chromedp.CSS("#rent-form")),
		chromedp.SetValue(chromedp.CSS("#rent-gpu"), "h100-80g-sxm"),
		chromedp.SetValue(chromedp.CSS("#rent-count"), "1"),
		chromedp.SetValue(chromedp.CSS("#rent-image"), st.image),
		chromedp.SetValue(chromedp.CSS("#rent-startup"), "echo hello; sleep 3600"),
	)
	run(t, ctx, "rent", chromedp.Click(chromedp.CSS("#rent-submit")))
	waitPath(t, ctx, "the instance page after renting", "/instances/")
	id := strings.TrimPrefix(eval[string](t, ctx, "location.pathname"), "/instances/")
	d := waitInstance(t, st, acc, id, "running", func(d *rental.Detail) bool { return d.Instance.State == gpurent.StateRunning })
	if c := d.Instance.StartupCommand; c == nil || *c != "echo hello; sleep 3600" {
		t.Fatalf("the rent form's startup command was kept as %v", c)
	}
	page := st.url + "/instances/" + id
	run(t, ctx, "open the instance page", nav(page+"?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#startup-card")))
	if got := text(t, ctx, "#startup-current"); got != "echo hello; sleep 3600" {
		t.Errorf("startup command shown as %q", got)
	}
	if got := eval[string](t, ctx, `document.getElementById('startup-mode').value`); got != "command" {
		t.Errorf("the form's choice is %q, want command", got)
	}

	// The logs panel asks and shows the answer (the output, or why it
	// cannot be read), no longer the loading text.
	poll(t, ctx, "the logs panel shows an answer", `(() => { const p = document.getElementById('logs'); return p && p.textContent !== '正在读取…' && p.textContent.length > 0; })()`)
	shot(t, ctx, "instance-startup-zh")

	// A command chosen with nothing typed: refused in Chinese, nothing changed.
	run(t, ctx, "open the startup form", nav(page+"?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#startup-form")))
	startupForm(t, ctx, "command", "")
	run(t, ctx, "save an empty command", chromedp.WaitVisible(chromedp.CSS("#form-error")))
	if got := text(t, ctx, "#form-error"); !strings.Contains(got, "启动命令") {
		t.Errorf("zh error %q", got)
	}
	// No command: saved, and the page says it applies at the next start.
	run(t, ctx, "open the startup form again", nav(page+"?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#startup-form")))
	startupForm(t, ctx, "none", "")
	poll(t, ctx, "the page says when it applies", `document.body.textContent.includes('下次开机时生效')`)
	if got := text(t, ctx, "#startup-current"); got != "无（不运行命令）" {
		t.Errorf("after choosing none: %q", got)
	}
	if in, err := st.s.Store.InstanceByID(bg, id); err != nil || in.StartupCommand == nil || *in.StartupCommand != "" {
		t.Fatalf("stored startup command after none: %v %v", in.StartupCommand, err)
	}

	// English: the card and the image's own command.
	run(t, ctx, "the instance page in English", nav(page+"?lang=en"), chromedp.WaitVisible(chromedp.CSS("#startup-form")))
	startupForm(t, ctx, "image", "")
	poll(t, ctx, "the English notice", `document.body.textContent.includes('applies at the next start')`)
	if got := text(t, ctx, "#startup-current"); got != "The image's own entrypoint and command" {
		t.Errorf("en after image default: %q", got)
	}
	if got := text(t, ctx, "#startup-card h2"); got != "Startup command" {
		t.Errorf("en card title %q", got)
	}
	shot(t, ctx, "instance-startup-en")
}

// startupForm chooses mode, types line into the instance page's startup
// form and submits it, as a person would (in one script: the live page
// may reload between separate steps).
func startupForm(t *testing.T, ctx context.Context, mode, line string) {
	t.Helper()
	js := `(() => { const m = document.getElementById('startup-mode'), i = document.getElementById('startup-input');
	if (!m || !i) return false; m.value = ` + strconv.Quote(mode) + `; i.value = ` + strconv.Quote(line) + `;
	if (m.value !== ` + strconv.Quote(mode) + `) return false;
	document.getElementById('startup-save').click(); return true; })()`
	poll(t, ctx, "submit the startup form ("+mode+")", js)
}
