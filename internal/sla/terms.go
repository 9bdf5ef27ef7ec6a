package sla

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"

	"github.com/gpurent/gpurent"
)

// Exclusion names one case the SLA does not credit. The set is closed, so
// that every exclusion is decided by code and published in every language.
type Exclusion = string

// The exclusions.
const (
	// ExclusionTenantFault: faults attributed to the tenant's own program
	// (application Xids and the like). Always excluded.
	ExclusionTenantFault Exclusion = "tenant_fault"
	// ExclusionAnnouncedMaintenance: maintenance announced at least
	// MaintenanceNoticeHours ahead.
	ExclusionAnnouncedMaintenance Exclusion = "announced_maintenance"
)

// Exclusions lists every known exclusion.
func Exclusions() []Exclusion {
	return []Exclusion{ExclusionTenantFault, ExclusionAnnouncedMaintenance}
}

// Bounds that Validate holds the terms to.
const (
	MaxIncidentCreditHours = 31 * 24  // a month
	MaxExpiryDays          = 10 * 366 // ten years
	MaxPostWithinMinutes   = 7 * 24 * 60
	MaxNoticeHours         = 365 * 24
	fullBP                 = 10_000 // 100% in basis points
)

// Tier is one row of the monthly availability table: when the month's
// availability is below BelowBasisPoints (10,000 = 100%), CreditPercent of
// the instance's monthly charge is credited.
type Tier struct {
	BelowBasisPoints int `json:"below_basis_points"`
	CreditPercent    int `json:"credit_percent"`
}

// Terms are the SLA's numbers. Every field is operator-configurable;
// DefaultTerms are the product's defaults. Use Validate (or ParseTerms)
// before relying on a Terms from outside the program.
type Terms struct {
	// HourRuleMinutes: a clock hour in which an instance was down for more
	// than this many minutes is not charged at all (0–59).
	HourRuleMinutes int `json:"hour_rule_minutes"`
	// IncidentCreditMaxHours caps the time since the last power-on that an
	// incident credit pays for.
	IncidentCreditMaxHours int `json:"incident_credit_max_hours"`
	// Tiers of the monthly availability credit, from the highest threshold
	// to the lowest; lower availability earns a strictly larger percentage.
	// The best tier that applies is credited; tiers do not add up. Empty:
	// no availability credit.
	Tiers []Tier `json:"tiers"`
	// CapPercent caps an instance's credits in a calendar month at this
	// percentage of its charges for that month (1–100).
	CapPercent int `json:"cap_percent"`
	// ExpiryDays: a credit expires this many days after it is posted.
	ExpiryDays int `json:"expiry_days"`
	// PostWithinMinutes: a credit is posted at most this long after its
	// incident ends.
	PostWithinMinutes int `json:"post_within_minutes"`
	// DegradedCountsAsDown: a degraded GPU (throttling, link or power below
	// spec, a failed benchmark) counts as down time.
	DegradedCountsAsDown bool `json:"degraded_counts_as_down"`
	// Exclusions: what is not credited, from the closed set Exclusions();
	// ExclusionTenantFault is required.
	Exclusions []Exclusion `json:"exclusions"`
	// MaintenanceNoticeHours: the notice that makes maintenance excluded
	// (with ExclusionAnnouncedMaintenance); 0 without that exclusion.
	MaintenanceNoticeHours int `json:"maintenance_notice_hours"`
}

// DefaultTerms returns the product's SLA: the hour rule at 6 minutes,
// incident credits up to 24 h, availability tiers 99.5% → 10%, 99.0% →
// 30%, 95.0% → 100%, a cap of 100% of the month's charges, credits expiring
// after 90 days and posted within 60 minutes, degraded GPUs down, and no
// credit for tenant faults or maintenance announced 72 h ahead.
func DefaultTerms() Terms {
	return Terms{
		HourRuleMinutes:        6,
		IncidentCreditMaxHours: 24,
		Tiers: []Tier{
			{BelowBasisPoints: 9950, CreditPercent: 10},
			{BelowBasisPoints: 9900, CreditPercent: 30},
			{BelowBasisPoints: 9500, CreditPercent: 100},
		},
		CapPercent:             100,
		ExpiryDays:             90,
		PostWithinMinutes:      60,
		DegradedCountsAsDown:   true,
		Exclusions:             []Exclusion{ExclusionTenantFault, ExclusionAnnouncedMaintenance},
		MaintenanceNoticeHours: 72,
	}
}

func invalid(format string, args ...any) error {
	return gpurent.Errorf(gpurent.CodeInvalid, "SLA terms: "+format, args...)
}

// Validate checks the terms; a violation is gpurent.CodeInvalid.
func (t Terms) Validate() error {
	if t.HourRuleMinutes < 0 || t.HourRuleMinutes > 59 {
		return invalid("hour_rule_minutes %d is out of range [0, 59]", t.HourRuleMinutes)
	}
	if t.IncidentCreditMaxHours < 1 || t.IncidentCreditMaxHours > MaxIncidentCreditHours {
		return invalid("incident_credit_max_hours %d is out of range [1, %d]", t.IncidentCreditMaxHours, MaxIncidentCreditHours)
	}
	for i, tier := range t.Tiers {
		if tier.BelowBasisPoints < 1 || tier.BelowBasisPoints > fullBP {
			return invalid("tier %d: below_basis_points %d is out of range [1, %d]", i+1, tier.BelowBasisPoints, fullBP)
		}
		if tier.CreditPercent < 1 || tier.CreditPercent > 100 {
			return invalid("tier %d: credit_percent %d is out of range [1, 100]", i+1, tier.CreditPercent)
		}
		if i > 0 {
			prev := t.Tiers[i-1]
			if tier.BelowBasisPoints >= prev.BelowBasisPoints {
				return invalid("tier %d: thresholds must strictly decrease (%d after %d)", i+1, tier.BelowBasisPoints, prev.BelowBasisPoints)
			}
			if tier.CreditPercent <= prev.CreditPercent {
				return invalid("tier %d: a lower threshold must credit strictly more (%d%% after %d%%)", i+1, tier.CreditPercent, prev.CreditPercent)
			}
		}
	}
	if t.CapPercent < 1 || t.CapPercent > 100 {
		return invalid("cap_percent %d is out of range [1, 100]", t.CapPercent)
	}
	if t.ExpiryDays < 1 || t.ExpiryDays > MaxExpiryDays {
		return invalid("expiry_days %d is out of range [1, %d]", t.ExpiryDays, MaxExpiryDays)
	}
	if t.PostWithinMinutes < 1 || t.PostWithinMinutes > MaxPostWithinMinutes {
		return invalid("post_within_minutes %d is out of range [1, %d]", t.PostWithinMinutes, MaxPostWithinMinutes)
	}
	known := Exclusions()
	for i, e := range t.Exclusions {
		if !slices.Contains(known, e) {
			return invalid("unknown exclusion %q (known: %v)", e, known)
		}
		if slices.Contains(t.Exclusions[:i], e) {
			return invalid("exclusion %q is listed twice", e)
		}
	}
	if !t.Excludes(ExclusionTenantFault) {
		return invalid("the exclusion %q is required: faults of the tenant's own program are never credited", ExclusionTenantFault)
	}
	if t.Excludes(ExclusionAnnouncedMaintenance) {
		if t.MaintenanceNoticeHours < 1 || t.MaintenanceNoticeHours > MaxNoticeHours {
			return invalid("maintenance_notice_hours %d is out of range [1, %d]", t.MaintenanceNoticeHours, MaxNoticeHours)
		}
	} else if t.MaintenanceNoticeHours != 0 {
		return invalid("maintenance_notice_hours is set but %q is not excluded", ExclusionAnnouncedMaintenance)
	}
	return nil
}

// ParseTerms reads terms from JSON, refusing unknown fields, and validates
// them. Fields absent from the document are zero, not defaulted.
func ParseTerms(data []byte) (Terms, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var t Terms
	if err := dec.Decode(&t); err != nil {
		return Terms{}, gpurent.WrapError(gpurent.CodeInvalid, err, "SLA terms: not a valid JSON document")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Terms{}, invalid("trailing data after the JSON document")
	}
	if err := t.Validate(); err != nil {
		return Terms{}, err
	}
	return t, nil
}

// Excludes reports whether e is one of the terms' exclusions.
func (t Terms) Excludes(e Exclusion) bool { return slices.Contains(t.Exclusions, e) }

// failure reports whether class is a failure of a GPU or host: the instance
// was interrupted.
func failure(class gpurent.FaultClass) bool {
	switch class {
	case gpurent.FaultReset, gpurent.FaultDrainReset, gpurent.FaultNode,
		gpurent.FaultRMA, gpurent.FaultHost, gpurent.FaultHostDown:
		return true
	}
	return false
}

// CountsAsDown reports whether a fault of this class and attribution makes
// the instance down for the hour rule and the availability credit: a
// host-attributed failure, and a host-attributed degradation when
// DegradedCountsAsDown. Tenant faults, informational events and unknown
// faults (human review, no penalty) never count.
func (t Terms) CountsAsDown(class gpurent.FaultClass, attr gpurent.Attribution) bool {
	if attr != gpurent.AttrHost {
		return false
	}
	return failure(class) || (class == gpurent.FaultDegraded && t.DegradedCountsAsDown)
}

// EarnsIncidentCredit reports whether a fault of this class and attribution
// earns an incident credit: a host-attributed failure of a GPU or host. A
// degradation interrupts nothing, so it counts as down time (CountsAsDown)
// but earns no incident credit.
func (t Terms) EarnsIncidentCredit(class gpurent.FaultClass, attr gpurent.Attribution) bool {
	return attr == gpurent.AttrHost && failure(class)
}
