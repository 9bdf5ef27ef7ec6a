package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rental"
)

// TestCustomerJourney is the customer journey, once in Chinese and
// once in English, each in its own browser: sign up; (an operator credits
// the new wallet); rent 2× H100 through the rent form; on the instance page
// copy the SSH command and open a forwarded port (Jupyter); upgrade to 4×
// H100 after seeing the plan with the price difference; stop it, confirming;
// and see the month's bill with the instance's lines.
func TestCustomerJourney(t *testing.T) {
	st := startSite(t)
	addH100Host(t, st) // a 2 → 4 upgrade claims the new GPUs beside the old: another host
	st.waitCertified()
	for _, c := range []struct {
		lang, rentTitle, billTitle string
	}{{"zh", "租用", "账单"}, {"en", "Rent", "Statement"}} {
		t.Run(c.lang, func(t *testing.T) {
			ctx := browser(t)
			bg := context.Background()
			email := "journey-" + c.lang + "@lab.example"
			signup(t, ctx, st.url, email, "Journey "+c.lang, "journey-password-1", c.lang)
			acc, err := st.s.Store.AccountByEmail(bg, email)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := st.s.Wallet.Credit(bg, st.ops, acc.ID, 500_000, "journey", "journey-"+c.lang); err != nil {
				t.Fatal(err)
			}

			// Rent 2× H100 through the form.
			run(t, ctx, "fill the rent form",
				nav(st.url+"/rent?lang="+c.lang),
				chromedp.WaitVisible(chromedp.CSS("#rent-form")),
				chromedp.SetValue(chromedp.CSS("#rent-gpu"), "h100-80g-sxm"),
				chromedp.SetValue(chromedp.CSS("#rent-count"), "2"),
				chromedp.SetValue(chromedp.CSS("#rent-image"), st.image),
				chromedp.SetValue(chromedp.CSS("#rent-name"), "journey"),
			)
			if h := text(t, ctx, "h1"); !strings.Contains(h, c.rentTitle) {
				t.Fatalf("rent page title %q, want %q", h, c.rentTitle)
			}
			shot(t, ctx, "journey-rent-"+c.lang)
			run(t, ctx, "rent", chromedp.Click(chromedp.CSS("#rent-submit")))
			waitPath(t, ctx, "the instance page after renting", "/instances/")
			loc := eval[string](t, ctx, "location.pathname")
			id := strings.TrimPrefix(loc, "/instances/")
			waitInstance(t, st, acc, id, "running with 2 GPUs", func(d *rental.Detail) bool {
				return d.Instance.State == gpurent.StateRunning && d.Instance.GPUCount == 2
			})

			// The SSH command, copied by its button.
			run(t, ctx, "reload the instance page", nav(st.url+"/instances/"+id), chromedp.WaitVisible(chromedp.CSS("#ssh-copy")))
			cmd := eval[string](t, ctx, `document.getElementById("ssh-copy").getAttribute("data-copy")`)
			if !strings.HasPrefix(cmd, "ssh -p ") || !strings.Contains(cmd, id+"@") {
				t.Fatalf("SSH command %q", cmd)
			}
			run(t, ctx, "copy the SSH command", chromedp.Click(chromedp.CSS("#ssh-copy")))
			poll(t, ctx, "the copy button marks the copy", `document.getElementById("ssh-copy").getAttribute("data-done") === "1"`)
			shot(t, ctx, "journey-instance-"+c.lang)

			// A forwarded port: Jupyter's button opens a link through the proxy.
			run(t, ctx, "open Jupyter", chromedp.Click(chromedp.CSS("#port-jupyter")))
			waitHost(t, ctx, "the port link, on the port's own host", id+"-8888.localhost:"+st.url[strings.LastIndex(st.url, ":")+1:])

			// Verify my GPUs: the suite on the instance, judged against the
			// fleet median, its results on the page.
			run(t, ctx, "verify my GPUs",
				nav(st.url+"/instances/"+id),
				chromedp.WaitVisible(chromedp.CSS("#verify-submit")),
				chromedp.Click(chromedp.CSS("#verify-submit")))
			// The run ends (the agent runs it; the service judges it), then the
			// page shows its results.
			deadline := time.Now().Add(60 * time.Second)
			for {
				jobs, err := st.s.Certification.Jobs(bg, acc, gpurent.BenchJobFilter{InstanceID: id})
				if err != nil {
					t.Fatal(err)
				}
				if len(jobs) > 0 && jobs[0].State != "queued" && jobs[0].State != "running" {
					if jobs[0].State != "done" {
						t.Fatalf("the verify run %s: %s", jobs[0].State, jobs[0].Error)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the verify run never ended: %+v", jobs)
				}
				time.Sleep(100 * time.Millisecond)
			}
			run(t, ctx, "the results", nav(st.url+"/instances/"+id), chromedp.WaitVisible(chromedp.CSS(".verify-results")))
			if res := text(t, ctx, ".verify-results"); !strings.Contains(res, "PASS") || strings.Contains(res, "FAIL") {
				t.Fatalf("verify results: %s", res)
			}

			// Upgrade to 4× H100: the plan first, with the price difference.
			run(t, ctx, "ask for the upgrade plan",
				nav(st.url+"/instances/"+id),
				chromedp.WaitVisible(chromedp.CSS("#upgrade-form")),
				chromedp.SetValue(chromedp.CSS("#upgrade-type"), "h100-80g-sxm"),
				chromedp.SetValue(chromedp.CSS("#upgrade-count"), "4"),
				chromedp.Click(chromedp.CSS("#upgrade-plan")),
				chromedp.WaitVisible(chromedp.CSS("#upgrade-confirm")))
			from, to, diff := yuan(t, text(t, ctx, "#upgrade-from-price")), yuan(t, text(t, ctx, "#upgrade-to-price")), text(t, ctx, "#upgrade-diff")
			// Each hour's price is rounded once; an hour that straddles the
			// off-peak window's edge mixes two rates, so twice the GPUs may
			// differ from twice the price by a fen.
			if d := to - 2*from; d < -1 || d > 1 || !strings.HasPrefix(strings.TrimSpace(diff), "+¥") {
				t.Fatalf("upgrade plan: from %d to %d fen, difference %q", from, to, diff)
			}
			shot(t, ctx, "journey-upgrade-"+c.lang)
			eval[bool](t, ctx, `(() => { window.confirm = () => true; return true; })()`)
			run(t, ctx, "confirm the upgrade", chromedp.Click(chromedp.CSS("#upgrade-confirm")))
			waitInstance(t, st, acc, id, "running with 4 GPUs", func(d *rental.Detail) bool {
				return d.Instance.State == gpurent.StateRunning && d.Instance.GPUCount == 4
			})

			// Stop, confirming.
			run(t, ctx, "stop",
				nav(st.url+"/instances/"+id),
				chromedp.WaitVisible(chromedp.CSS("#instance-stop")))
			eval[bool](t, ctx, `(() => { window.confirm = () => true; return true; })()`)
			run(t, ctx, "click stop", chromedp.Click(chromedp.CSS("#instance-stop")))
			waitInstance(t, st, acc, id, "stopped", func(d *rental.Detail) bool { return d.Instance.State == gpurent.StateStopped })

			// The bill: this month's statement lists the instance's runs.
			run(t, ctx, "open the billing page", nav(st.url+"/billing"), chromedp.WaitVisible(chromedp.CSS("#statement-this-link")))
			href := eval[string](t, ctx, `document.getElementById("statement-this-link").getAttribute("href")`)
			tries := 0
			for {
				run(t, ctx, "open the statement", nav(st.url+href), chromedp.WaitVisible(chromedp.CSS("#statement")))
				if ok := eval[bool](t, ctx, `!!document.getElementById("statement-lines") && document.getElementById("statement-lines").textContent.includes("journey")`); ok {
					break
				}
				if tries++; tries > 100 {
					t.Fatalf("the statement never listed the instance: %s", text(t, ctx, "#statement"))
				}
				run(t, ctx, "wait", chromedp.Sleep(300e6))
			}
			if h := text(t, ctx, "h1"); !strings.Contains(h, c.billTitle) {
				t.Fatalf("statement title %q, want %q", h, c.billTitle)
			}
			if total := yuan(t, text(t, ctx, "#statement-lines #statement-total")); total <= 0 {
				t.Fatalf("statement total %d fen", total)
			}
			shot(t, ctx, "journey-bill-"+c.lang)
		})
	}
}
