package sla_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/sla"
)

func TestDefaultTerms(t *testing.T) {
	d := sla.DefaultTerms()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	want := sla.Terms{
		HourRuleMinutes: 6, IncidentCreditMaxHours: 24,
		Tiers:      []sla.Tier{{BelowBasisPoints: 9950, CreditPercent: 10}, {BelowBasisPoints: 9900, CreditPercent: 30}, {BelowBasisPoints: 9500, CreditPercent: 100}},
		CapPercent: 100, ExpiryDays: 90, PostWithinMinutes: 60, DegradedCountsAsDown: true,
		Exclusions:             []string{sla.ExclusionTenantFault, sla.ExclusionAnnouncedMaintenance},
		MaintenanceNoticeHours: 72,
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("DefaultTerms = %+v, want %+v", d, want)
	}
	// Each call returns its own slices.
	d.Tiers[0].CreditPercent = 99
	if sla.DefaultTerms().Tiers[0].CreditPercent != 10 {
		t.Error("DefaultTerms shares its tiers between calls")
	}
}

func TestTermsJSON(t *testing.T) {
	d := sla.DefaultTerms()
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"hour_rule_minutes":6,"incident_credit_max_hours":24,"tiers":[{"below_basis_points":9950,"credit_percent":10},{"below_basis_points":9900,"credit_percent":30},{"below_basis_points":9500,"credit_percent":100}],"cap_percent":100,"expiry_days":90,"post_within_minutes":60,"degraded_counts_as_down":true,"exclusions":["tenant_fault","announced_maintenance"],"maintenance_notice_hours":72}`
	if string(data) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", data, want)
	}
	back, err := sla.ParseTerms(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, d) {
		t.Errorf("round trip = %+v", back)
	}
	for name, doc := range map[string]string{
		"unknown field":  strings.Replace(want, `"cap_percent"`, `"cap_pct"`, 1),
		"trailing data":  want + `{}`,
		"not JSON":       `{"hour_rule_minutes":`,
		"invalid terms":  strings.Replace(want, `"cap_percent":100`, `"cap_percent":101`, 1),
		"missing fields": `{}`,
		"wrong type":     strings.Replace(want, `"expiry_days":90`, `"expiry_days":"90"`, 1),
	} {
		if _, err := sla.ParseTerms([]byte(doc)); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: ParseTerms error = %v, want invalid", name, err)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	cases := map[string]func(*sla.Terms){
		"negative hour rule":        func(t *sla.Terms) { t.HourRuleMinutes = -1 },
		"hour rule of an hour":      func(t *sla.Terms) { t.HourRuleMinutes = 60 },
		"no incident hours":         func(t *sla.Terms) { t.IncidentCreditMaxHours = 0 },
		"incident hours too many":   func(t *sla.Terms) { t.IncidentCreditMaxHours = sla.MaxIncidentCreditHours + 1 },
		"threshold 0":               func(t *sla.Terms) { t.Tiers[2].BelowBasisPoints = 0 },
		"threshold above 100%":      func(t *sla.Terms) { t.Tiers[0].BelowBasisPoints = 10001 },
		"credit 0%":                 func(t *sla.Terms) { t.Tiers[0].CreditPercent = 0 },
		"credit above 100%":         func(t *sla.Terms) { t.Tiers[2].CreditPercent = 101 },
		"thresholds not decreasing": func(t *sla.Terms) { t.Tiers[1].BelowBasisPoints = 9950 },
		"credits not increasing":    func(t *sla.Terms) { t.Tiers[1].CreditPercent = 10 },
		"cap 0":                     func(t *sla.Terms) { t.CapPercent = 0 },
		"cap above 100":             func(t *sla.Terms) { t.CapPercent = 101 },
		"no expiry":                 func(t *sla.Terms) { t.ExpiryDays = 0 },
		"expiry too long":           func(t *sla.Terms) { t.ExpiryDays = sla.MaxExpiryDays + 1 },
		"no posting deadline":       func(t *sla.Terms) { t.PostWithinMinutes = 0 },
		"posting deadline too long": func(t *sla.Terms) { t.PostWithinMinutes = sla.MaxPostWithinMinutes + 1 },
		"unknown exclusion":         func(t *sla.Terms) { t.Exclusions = append(t.Exclusions, "acts_of_god") },
		"duplicate exclusion":       func(t *sla.Terms) { t.Exclusions = append(t.Exclusions, sla.ExclusionTenantFault) },
		"tenant faults credited":    func(t *sla.Terms) { t.Exclusions = []string{sla.ExclusionAnnouncedMaintenance} },
		"maintenance without notice": func(t *sla.Terms) {
			t.MaintenanceNoticeHours = 0
		},
		"notice without the exclusion": func(t *sla.Terms) {
			t.Exclusions = []string{sla.ExclusionTenantFault}
		},
	}
	for name, mutate := range cases {
		terms := sla.DefaultTerms()
		mutate(&terms)
		if err := terms.Validate(); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: Validate = %v, want invalid", name, err)
		}
	}
	ok := sla.DefaultTerms()
	ok.Tiers = nil
	ok.HourRuleMinutes = 0
	ok.Exclusions = []string{sla.ExclusionTenantFault}
	ok.MaintenanceNoticeHours = 0
	if err := ok.Validate(); err != nil {
		t.Errorf("terms without tiers or maintenance exclusion: %v", err)
	}
}

func TestFaultClassification(t *testing.T) {
	terms := sla.DefaultTerms()
	noDegraded := terms
	noDegraded.DegradedCountsAsDown = false
	cases := []struct {
		class        gpurent.FaultClass
		down, credit bool
	}{
		{gpurent.FaultReset, true, true},
		{gpurent.FaultDrainReset, true, true},
		{gpurent.FaultNode, true, true},
		{gpurent.FaultRMA, true, true},
		{gpurent.FaultHost, true, true},
		{gpurent.FaultHostDown, true, true},
		{gpurent.FaultDegraded, true, false},
		{gpurent.FaultApp, false, false},
		{gpurent.FaultInfo, false, false},
		{gpurent.FaultUnknown, false, false},
		{"something_new", false, false},
	}
	for _, c := range cases {
		if got := terms.CountsAsDown(c.class, gpurent.AttrHost); got != c.down {
			t.Errorf("CountsAsDown(%s, host) = %v, want %v", c.class, got, c.down)
		}
		if got := terms.EarnsIncidentCredit(c.class, gpurent.AttrHost); got != c.credit {
			t.Errorf("EarnsIncidentCredit(%s, host) = %v, want %v", c.class, got, c.credit)
		}
		for _, attr := range []gpurent.Attribution{gpurent.AttrTenant, gpurent.AttrNone, ""} {
			if terms.CountsAsDown(c.class, attr) || terms.EarnsIncidentCredit(c.class, attr) {
				t.Errorf("%s attributed %q must count for nothing", c.class, attr)
			}
		}
	}
	if noDegraded.CountsAsDown(gpurent.FaultDegraded, gpurent.AttrHost) {
		t.Error("with DegradedCountsAsDown false, degraded must not count as down")
	}
}
