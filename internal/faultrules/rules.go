package faultrules

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpurent/gpurent"
)

// Action is what the control plane does about a fault.
type Action string

// Actions, one per fault class (ActionFor).
const (
	// ActNotifyTenant tells the tenant their program faulted; nothing is
	// drained and nothing is credited.
	ActNotifyTenant Action = "notify_tenant"
	// ActRecord records the event for trending; nothing else happens now.
	ActRecord Action = "record"
	// ActCordonFailover cordons the GPU, fails its instance over (when the
	// customer allows it) and resets the GPU when idle.
	ActCordonFailover Action = "cordon_failover"
	// ActDrainPeersFailover is ActCordonFailover for the GPU and every GPU
	// it talks to peer-to-peer (its topology group).
	ActDrainPeersFailover Action = "drain_peers_failover"
	// ActNodeFailover fails over every instance on the host at once; the
	// host is power-cycled and certified (T2) before it is relisted.
	ActNodeFailover Action = "node_failover"
	// ActDelistGPU takes the GPU out of the fleet for return to the vendor.
	ActDelistGPU Action = "delist_gpu"
	// ActWarnDegraded warns the operator, badges the GPU on the public
	// report and runs a T2 certification.
	ActWarnDegraded Action = "warn_degraded"
	// ActDelistHost takes the whole host out of the fleet.
	ActDelistHost Action = "delist_host"
	// ActReview asks a person to look; no penalty, no credit.
	ActReview Action = "review"
)

// ActionFor is the action of a fault class; "" for a class it does not know.
func ActionFor(c gpurent.FaultClass) Action {
	switch c {
	case gpurent.FaultApp:
		return ActNotifyTenant
	case gpurent.FaultInfo:
		return ActRecord
	case gpurent.FaultReset:
		return ActCordonFailover
	case gpurent.FaultDrainReset:
		return ActDrainPeersFailover
	case gpurent.FaultNode, gpurent.FaultHostDown:
		return ActNodeFailover
	case gpurent.FaultRMA:
		return ActDelistGPU
	case gpurent.FaultDegraded:
		return ActWarnDegraded
	case gpurent.FaultHost:
		return ActDelistHost
	case gpurent.FaultUnknown:
		return ActReview
	}
	return ""
}

// AttributionFor is who a fault class is charged to: the tenant for APP,
// nobody for INFO and UNKNOWN, the platform for everything else; "" for a
// class it does not know.
func AttributionFor(c gpurent.FaultClass) gpurent.Attribution {
	switch c {
	case gpurent.FaultApp:
		return gpurent.AttrTenant
	case gpurent.FaultInfo, gpurent.FaultUnknown:
		return gpurent.AttrNone
	case gpurent.FaultReset, gpurent.FaultDrainReset, gpurent.FaultNode,
		gpurent.FaultRMA, gpurent.FaultDegraded, gpurent.FaultHost, gpurent.FaultHostDown:
		return gpurent.AttrHost
	}
	return ""
}

// Rule is how one Xid is handled.
type Rule struct {
	Xid         int
	Name        string // what the Xid means, one line ("GPU has fallen off the bus")
	Class       gpurent.FaultClass
	Attribution gpurent.Attribution // from the class (AttributionFor)
	Action      Action              // from the class (ActionFor)
	// Sympathetic marks an Xid that follows another error (Xid 45's
	// clean-up, Xid 63's retirement record, Xid 154's recovery action): it
	// decides a burst only when nothing else in it does.
	Sympathetic bool
	// ResetWhenIdle asks for a GPU reset once no instance uses the GPU,
	// even where the class itself does not (Xid 94, Xid 63).
	ResetWhenIdle bool
	Source        string // where the rule comes from: the catalogue URL, the reference
}

// Rules is a validated Xid table. The zero value knows no Xid.
type Rules struct {
	byXid map[int]Rule
}

// Limits of a rules file.
const (
	maxXid       = 1 << 16
	maxRules     = 4096
	maxNameLen   = 200
	maxSourceLen = 1000
)

//go:embed xid_rules.json
var embeddedRules []byte

// DefaultRules parses and validates the embedded rules file.
func DefaultRules() (*Rules, error) {
	r, err := ParseRules(embeddedRules)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "the built-in Xid rules are broken")
	}
	return r, nil
}

// ruleFile is the JSON shape of a rules file.
type ruleFile struct {
	Version   int        `json:"version"`
	Catalogue string     `json:"catalogue"`
	Rules     []ruleJSON `json:"rules"`
}

type ruleJSON struct {
	Xid           int    `json:"xid"`
	Name          string `json:"name"`
	Class         string `json:"class"`
	Sympathetic   bool   `json:"sympathetic,omitempty"`
	ResetWhenIdle bool   `json:"reset_when_idle,omitempty"`
	Source        string `json:"source"`
}

// xidClass reports whether a rule for an Xid may name class c. UNKNOWN is
// what an Xid without a rule gets, and HOST_DOWN is the agent's silence, so
// neither belongs in the table.
func xidClass(c gpurent.FaultClass) bool {
	switch c {
	case gpurent.FaultApp, gpurent.FaultInfo, gpurent.FaultReset, gpurent.FaultDrainReset,
		gpurent.FaultNode, gpurent.FaultRMA, gpurent.FaultDegraded, gpurent.FaultHost:
		return true
	}
	return false
}

// ParseRules parses and validates a rules file: version 1, at least one
// rule, every Xid in 1..65535 once, a known class, a one-line name and a
// source on every rule, no unknown fields. The error is an invalid-code
// gpurent error naming the first problem found.
func ParseRules(data []byte) (*Rules, error) {
	var f ruleFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "rules file: not valid JSON of the expected shape")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "rules file: data after the JSON object")
	}
	if f.Version != 1 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "rules file: version %d, want 1", f.Version)
	}
	if len(f.Rules) == 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "rules file: no rules")
	}
	if len(f.Rules) > maxRules {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "rules file: %d rules, at most %d", len(f.Rules), maxRules)
	}
	r := &Rules{byXid: make(map[int]Rule, len(f.Rules))}
	for i, j := range f.Rules {
		where := fmt.Sprintf("rules file: rule %d (xid %d)", i+1, j.Xid)
		if j.Xid < 1 || j.Xid >= maxXid {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "%s: xid must be 1..%d", where, maxXid-1)
		}
		if _, dup := r.byXid[j.Xid]; dup {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "%s: xid %d has more than one rule", where, j.Xid)
		}
		class := gpurent.FaultClass(j.Class)
		if !xidClass(class) {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "%s: unknown class %q", where, j.Class)
		}
		if err := checkText(j.Name, maxNameLen); err != "" {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "%s: name %s", where, err)
		}
		if err := checkText(j.Source, maxSourceLen); err != "" {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "%s: source %s", where, err)
		}
		r.byXid[j.Xid] = Rule{
			Xid:           j.Xid,
			Name:          strings.TrimSpace(j.Name),
			Class:         class,
			Attribution:   AttributionFor(class),
			Action:        ActionFor(class),
			Sympathetic:   j.Sympathetic,
			ResetWhenIdle: j.ResetWhenIdle,
			Source:        strings.TrimSpace(j.Source),
		}
	}
	return r, nil
}

// checkText says what is wrong with a required one-line text, or "".
func checkText(s string, max int) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "is empty"
	case len(s) > max:
		return fmt.Sprintf("is longer than %d bytes", max)
	case strings.ContainsAny(s, "\r\n"):
		return "spans more than one line"
	}
	return ""
}

// Lookup returns the rule of an Xid.
func (r *Rules) Lookup(xid int) (Rule, bool) {
	if r == nil {
		return Rule{}, false
	}
	rule, ok := r.byXid[xid]
	return rule, ok
}

// All returns every rule, by Xid.
func (r *Rules) All() []Rule {
	if r == nil {
		return nil
	}
	out := make([]Rule, 0, len(r.byXid))
	for _, rule := range r.byXid {
		out = append(out, rule)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Xid < out[j].Xid })
	return out
}
