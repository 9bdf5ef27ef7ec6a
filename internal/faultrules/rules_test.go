package faultrules

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
)

// tableClasses is the reference table (reference/gpus.md, "Faults: Xid
// classes and actions"): the Xids each class lists.
var tableClasses = map[gpurent.FaultClass][]int{
	gpurent.FaultApp:   {13, 31, 43, 45, 68, 69, 94, 137},
	gpurent.FaultInfo:  {63, 92, 154},
	gpurent.FaultReset: {46, 48, 62, 64, 95, 109, 119, 120, 136, 140, 143, 158},
	gpurent.FaultNode:  {74, 79},
	gpurent.FaultHost:  {54},
}

func mustRules(t testing.TB) *Rules {
	t.Helper()
	r, err := DefaultRules()
	if err != nil {
		t.Fatalf("DefaultRules: %v", err)
	}
	return r
}

func TestDefaultRulesCoverTheTable(t *testing.T) {
	r := mustRules(t)
	want := 0
	for class, xids := range tableClasses {
		for _, xid := range xids {
			want++
			rule, ok := r.Lookup(xid)
			if !ok {
				t.Errorf("Xid %d: no rule", xid)
				continue
			}
			if rule.Class != class {
				t.Errorf("Xid %d: class %s, want %s", xid, rule.Class, class)
			}
			if rule.Attribution != AttributionFor(class) || rule.Action != ActionFor(class) {
				t.Errorf("Xid %d: attribution %s action %s, want %s %s", xid, rule.Attribution, rule.Action, AttributionFor(class), ActionFor(class))
			}
			if !strings.Contains(rule.Source, "docs.nvidia.com/deploy/xid-errors") || !strings.Contains(rule.Source, "gpus.md") {
				t.Errorf("Xid %d: source %q does not name the catalogue and the reference", xid, rule.Source)
			}
			if rule.Name == "" {
				t.Errorf("Xid %d: no name", xid)
			}
		}
	}
	if got := len(r.All()); got != want {
		t.Errorf("%d rules, the table has %d Xids", got, want)
	}
	if _, ok := r.Lookup(9999); ok {
		t.Error("Lookup(9999) found a rule")
	}
	all := r.All()
	for i := 1; i < len(all); i++ {
		if all[i-1].Xid >= all[i].Xid {
			t.Fatalf("All not sorted by Xid: %d before %d", all[i-1].Xid, all[i].Xid)
		}
	}
	for _, xid := range []int{45, 63, 154} {
		if rule, _ := r.Lookup(xid); !rule.Sympathetic {
			t.Errorf("Xid %d should be sympathetic", xid)
		}
	}
	if rule, _ := r.Lookup(79); rule.Name != "GPU has fallen off the bus" {
		t.Errorf("Xid 79 name %q", rule.Name)
	}
}

func TestActionAndAttributionCoverEveryClass(t *testing.T) {
	classes := []gpurent.FaultClass{gpurent.FaultApp, gpurent.FaultInfo, gpurent.FaultReset,
		gpurent.FaultDrainReset, gpurent.FaultNode, gpurent.FaultRMA, gpurent.FaultDegraded,
		gpurent.FaultHost, gpurent.FaultHostDown, gpurent.FaultUnknown}
	seen := map[Action]bool{}
	for _, c := range classes {
		if ActionFor(c) == "" || AttributionFor(c) == "" {
			t.Errorf("class %s: action %q attribution %q", c, ActionFor(c), AttributionFor(c))
		}
		seen[ActionFor(c)] = true
	}
	for _, a := range []Action{ActNotifyTenant, ActRecord, ActCordonFailover, ActDrainPeersFailover,
		ActNodeFailover, ActDelistGPU, ActWarnDegraded, ActDelistHost, ActReview} {
		if !seen[a] {
			t.Errorf("no class has action %s", a)
		}
	}
	if ActionFor("bogus") != "" || AttributionFor("bogus") != "" {
		t.Error("an unknown class got an action or attribution")
	}
	if AttributionFor(gpurent.FaultApp) != gpurent.AttrTenant || AttributionFor(gpurent.FaultUnknown) != gpurent.AttrNone ||
		AttributionFor(gpurent.FaultReset) != gpurent.AttrHost {
		t.Error("attributions do not follow the table")
	}
}

func rulesJSON(rules ...string) string {
	return `{"version":1,"catalogue":"x","rules":[` + strings.Join(rules, ",") + `]}`
}

const goodRule = `{"xid":13,"name":"Graphics engine exception","class":"app","source":"catalogue"}`

func TestParseRulesValidation(t *testing.T) {
	if r, err := ParseRules([]byte(rulesJSON(goodRule))); err != nil {
		t.Fatalf("a good file: %v", err)
	} else if rule, ok := r.Lookup(13); !ok || rule.Class != gpurent.FaultApp || rule.Action != ActNotifyTenant {
		t.Fatalf("a good file: rule %+v %v", rule, ok)
	}
	bad := map[string]string{
		"not json":          `{`,
		"empty":             ``,
		"trailing data":     rulesJSON(goodRule) + `{}`,
		"wrong version":     `{"version":2,"rules":[` + goodRule + `]}`,
		"no version":        `{"rules":[` + goodRule + `]}`,
		"no rules":          rulesJSON(),
		"unknown field":     rulesJSON(`{"xid":13,"name":"n","class":"app","source":"s","colour":"red"}`),
		"unknown top field": `{"version":1,"rules":[` + goodRule + `],"extra":1}`,
		"duplicate xid":     rulesJSON(goodRule, `{"xid":13,"name":"again","class":"reset","source":"s"}`),
		"xid zero":          rulesJSON(`{"xid":0,"name":"n","class":"app","source":"s"}`),
		"xid negative":      rulesJSON(`{"xid":-4,"name":"n","class":"app","source":"s"}`),
		"xid too big":       rulesJSON(`{"xid":65536,"name":"n","class":"app","source":"s"}`),
		"unknown class":     rulesJSON(`{"xid":13,"name":"n","class":"fatal","source":"s"}`),
		"class unknown":     rulesJSON(`{"xid":13,"name":"n","class":"unknown","source":"s"}`),
		"class host_down":   rulesJSON(`{"xid":13,"name":"n","class":"host_down","source":"s"}`),
		"class upper case":  rulesJSON(`{"xid":13,"name":"n","class":"APP","source":"s"}`),
		"no class":          rulesJSON(`{"xid":13,"name":"n","source":"s"}`),
		"no source":         rulesJSON(`{"xid":13,"name":"n","class":"app"}`),
		"blank source":      rulesJSON(`{"xid":13,"name":"n","class":"app","source":"  "}`),
		"no name":           rulesJSON(`{"xid":13,"class":"app","source":"s"}`),
		"two-line name":     rulesJSON(`{"xid":13,"name":"a\nb","class":"app","source":"s"}`),
		"long name":         rulesJSON(`{"xid":13,"name":"` + strings.Repeat("n", 201) + `","class":"app","source":"s"}`),
		"xid as string":     rulesJSON(`{"xid":"13","name":"n","class":"app","source":"s"}`),
		"rules not a list":  `{"version":1,"rules":{}}`,
	}
	for name, data := range bad {
		t.Run(name, func(t *testing.T) {
			r, err := ParseRules([]byte(data))
			if err == nil {
				t.Fatalf("accepted: %+v", r.All())
			}
			if !gpurent.IsCode(err, gpurent.CodeInvalid) {
				t.Fatalf("code %s, want invalid: %v", gpurent.ErrorCode(err), err)
			}
			if r != nil {
				t.Fatal("returned rules with an error")
			}
		})
	}
}

func TestNilRulesKnowNothing(t *testing.T) {
	var r *Rules
	if _, ok := r.Lookup(79); ok {
		t.Fatal("nil rules found Xid 79")
	}
	if v := r.Classify([]gpurent.GPUEvent{xidEv(0, 79, "")}); v.Class != gpurent.FaultUnknown {
		t.Fatalf("nil rules classified Xid 79 as %s", v.Class)
	}
}

func FuzzParseRules(f *testing.F) {
	f.Add(embeddedRules)
	f.Add([]byte(rulesJSON(goodRule)))
	f.Add([]byte(rulesJSON(goodRule, goodRule)))
	f.Add([]byte(`{"version":1,"rules":[{"xid":1e3,"name":"n","class":"rma","source":"s","sympathetic":true}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRules(data)
		if err != nil {
			if r != nil {
				t.Fatal("rules and an error")
			}
			if !gpurent.IsCode(err, gpurent.CodeInvalid) {
				t.Fatalf("code %s: %v", gpurent.ErrorCode(err), err)
			}
			return
		}
		var raw struct {
			Rules []json.RawMessage `json:"rules"`
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatalf("accepted data that is not JSON: %v", err)
		}
		all := r.All()
		if len(all) != len(raw.Rules) || len(all) == 0 {
			t.Fatalf("%d rules from %d in the file", len(all), len(raw.Rules))
		}
		for i, rule := range all {
			if i > 0 && all[i-1].Xid >= rule.Xid {
				t.Fatalf("Xid %d twice or out of order", rule.Xid)
			}
			if !xidClass(rule.Class) || rule.Action != ActionFor(rule.Class) || rule.Attribution != AttributionFor(rule.Class) {
				t.Fatalf("rule %+v inconsistent", rule)
			}
			if rule.Name == "" || rule.Source == "" || strings.ContainsAny(rule.Name+rule.Source, "\r\n") {
				t.Fatalf("rule %+v: bad text", rule)
			}
			if got, ok := r.Lookup(rule.Xid); !ok || got != rule {
				t.Fatalf("Lookup(%d) = %+v %v", rule.Xid, got, ok)
			}
			v := r.Classify([]gpurent.GPUEvent{xidEv(0, rule.Xid, "")})
			if v.Class == "" || v.Action == "" {
				t.Fatalf("Classify of Xid %d: %+v", rule.Xid, v)
			}
		}
	})
}
