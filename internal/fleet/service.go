// Package fleet keeps the picture of zones, hosts and GPUs: agent
// registration with one-time per-host join tokens, inventory and heartbeats from reports,
// operator actions on hosts, and what is free per GPU type and zone.
package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// Store is what the fleet service reads and writes: the hosts, their GPUs,
// join tokens and agent credentials, where the gateway reaches each agent,
// and the catalog it checks registrations against; registrations in one
// transaction.
type Store interface {
	gpurent.FleetStore
	gpurent.HostCredentialStore
	gpurent.CatalogStore
	gpurent.Transactor
	SetHostAccess(ctx context.Context, hostID, addr, hostKey string) error
	// The images agents report they hold (pre-pulled).
	SetHostImages(ctx context.Context, hostID string, refs []string) error
}

// Config configures the service.
type Config struct {
	Store  Store
	Now    func() time.Time
	Logger *slog.Logger
	// OnChange is called after hosts or GPUs change (placement caches drop).
	OnChange func()
	// HostTimeout: a host silent longer is not counted as available
	// (default 30 s).
	HostTimeout time.Duration
}

// Service is the fleet service.
type Service struct {
	cfg Config
}

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OnChange == nil {
		cfg.OnChange = func() {}
	}
	if cfg.HostTimeout <= 0 {
		cfg.HostTimeout = 30 * time.Second
	}
	return &Service{cfg: cfg}
}

// Availability is a GPU type with how many of its GPUs exist and are free.
type Availability struct {
	Type  gpurent.GPUType
	Total int
	Free  int
	Zones []ZoneAvailability
}

// ZoneAvailability is one zone's share of a GPU type.
type ZoneAvailability struct {
	ZoneID     string
	Total      int
	Free       int
	MaxPerHost int
}

// HashToken is the stored form of an agent token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Register adds a host whose agent presents a one-time join token, or
// re-registers an existing one whose agent presents its current agent
// token or the join token an operator's reset issued for it. Anything else
// naming an existing host is refused and changes nothing: no registration
// takes a host over, and none moves a GPU another live host holds.
func (s *Service) Register(ctx context.Context, req agentproto.RegisterRequest) (agentproto.RegisterResponse, error) {
	if req.JoinToken == "" && req.AgentToken == "" {
		return agentproto.RegisterResponse{}, gpurent.Errorf(gpurent.CodeUnauthorized,
			"a join token is required: an operator creates one with `gpurent hosts join-token create --zone ZONE`")
	}
	if !validHostName(req.Name) {
		return agentproto.RegisterResponse{}, gpurent.Errorf(gpurent.CodeInvalid, "host name must be 1-63 letters, digits, '.', '_' or '-'")
	}
	if req.Runtime != "docker" && req.Runtime != "process" {
		return agentproto.RegisterResponse{}, gpurent.Errorf(gpurent.CodeInvalid, "runtime must be docker or process, got %q", req.Runtime)
	}
	if req.CPUMilli <= 0 || req.MemoryMiB <= 0 {
		return agentproto.RegisterResponse{}, gpurent.Errorf(gpurent.CodeInvalid, "cpu_milli and memory_mib must be positive")
	}
	if _, err := s.cfg.Store.Zone(ctx, req.Zone); gpurent.IsCode(err, gpurent.CodeNotFound) {
		return agentproto.RegisterResponse{}, gpurent.Errorf(gpurent.CodeInvalid, "unknown zone %q", req.Zone)
	} else if err != nil {
		return agentproto.RegisterResponse{}, err
	}
	types, err := s.typeSet(ctx)
	if err != nil {
		return agentproto.RegisterResponse{}, err
	}
	gpus, err := toGPUs(req.GPUs, types)
	if err != nil {
		return agentproto.RegisterResponse{}, err
	}
	token := "gpa_" + gpurent.RandomSecret(32)
	now := s.cfg.Now().UTC()
	h := &gpurent.Host{
		Name: req.Name, ZoneID: req.Zone, State: gpurent.HostReady, CPUMilli: req.CPUMilli,
		MemoryMiB: req.MemoryMiB, DiskGiB: req.DiskGiB, Runtime: req.Runtime, AgentVersion: req.AgentVersion,
		AgentTokenHash: HashToken(token), LastSeenAt: &now, RegisteredAt: now,
	}
	how := ""
	err = s.cfg.Store.InTx(ctx, func(q gpurent.Queries) error {
		existing, via, err := s.admit(ctx, q, req, now)
		if err != nil {
			return err
		}
		how = via
		if existing != nil {
			err = q.UpsertHost(ctx, h) // same name: keeps its id, state and generation
		} else {
			err = q.CreateHost(ctx, h) // a name taken meanwhile is a conflict, never an update
		}
		if gpurent.IsCode(err, gpurent.CodeConflict) {
			return hostTaken(req.Name)
		} else if err != nil {
			return err
		}
		for i := range gpus {
			gpus[i].HostID = h.ID
		}
		if existing != nil {
			gpus = keepOperatorHealth(existing.GPUs, gpus)
		}
		if err := q.SyncHostGPUs(ctx, h.ID, gpus); err != nil {
			return err
		}
		if err := q.TouchHost(ctx, h.ID, now); err != nil {
			return err
		}
		_, err = q.BumpHostGeneration(ctx, h.ID)
		return err
	})
	if err != nil {
		if gpurent.IsCode(err, gpurent.CodeConflict) || gpurent.IsCode(err, gpurent.CodeUnauthorized) || gpurent.IsCode(err, gpurent.CodeForbidden) {
			s.cfg.Logger.Warn("host registration refused", "name", req.Name, "zone", req.Zone, "err", err)
		}
		return agentproto.RegisterResponse{}, err
	}
	s.cfg.Logger.Info("host registered", "host", h.ID, "name", h.Name, "zone", h.ZoneID, "gpus", len(gpus), "runtime", h.Runtime, "with", how)
	s.cfg.OnChange()
	return agentproto.RegisterResponse{HostID: h.ID, AgentToken: token}, nil
}

func hostTaken(name string) error {
	return gpurent.Errorf(gpurent.CodeConflict,
		"a host called %q is registered: its agent re-registers with its own agent credential, or an operator resets it (`gpurent hosts reset HOST_ID`) and gives the new join token to its agent", name)
}

// admit decides, inside the registration's transaction, whether req may
// register: it answers the existing host it re-registers (nil for a new
// one) and how it was admitted. A join token is used up here, in the same
// transaction: a refused registration leaves it unused.
func (s *Service) admit(ctx context.Context, q gpurent.Queries, req agentproto.RegisterRequest, now time.Time) (*gpurent.Host, string, error) {
	if req.AgentToken != "" {
		cur, err := q.HostByAgentTokenHash(ctx, HashToken(req.AgentToken))
		switch {
		case err == nil && cur.Name == req.Name:
			full, err := q.HostByID(ctx, cur.ID)
			return full, "agent credential", err
		case err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound):
			return nil, "", err
		case req.JoinToken == "":
			return nil, "", gpurent.Errorf(gpurent.CodeUnauthorized, "the agent credential is not valid for host %q", req.Name)
		}
	}
	jt, err := q.UseJoinToken(ctx, HashToken(req.JoinToken), req.Name, now)
	switch {
	case gpurent.IsCode(err, gpurent.CodeNotFound):
		return nil, "", gpurent.Errorf(gpurent.CodeUnauthorized, "invalid join token")
	case gpurent.IsCode(err, gpurent.CodeConflict):
		var ge *gpurent.Error
		msg := "the join token cannot be used again"
		if errors.As(err, &ge) {
			msg = ge.Message + ": a join token registers one host once; ask an operator for a new one"
		}
		return nil, "", gpurent.Errorf(gpurent.CodeUnauthorized, "%s", msg)
	case err != nil:
		return nil, "", err
	}
	if jt.ZoneID != req.Zone {
		return nil, "", gpurent.Errorf(gpurent.CodeForbidden, "the join token is for zone %q, not %q", jt.ZoneID, req.Zone)
	}
	if jt.Name != "" && jt.Name != req.Name {
		return nil, "", gpurent.Errorf(gpurent.CodeForbidden, "the join token is for host %q, not %q", jt.Name, req.Name)
	}
	if jt.HostID == "" {
		return nil, "join token " + jt.ID, nil // a new host: CreateHost refuses a taken name
	}
	cur, err := q.HostByID(ctx, jt.HostID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, "", gpurent.Errorf(gpurent.CodeForbidden, "the join token was issued for a host that no longer exists")
	} else if err != nil {
		return nil, "", err
	}
	if cur.Name != req.Name {
		return nil, "", gpurent.Errorf(gpurent.CodeForbidden, "the join token is for host %q, not %q", cur.Name, req.Name)
	}
	return cur, "reset join token " + jt.ID, nil
}

func validHostName(n string) bool {
	if n == "" || len(n) > 63 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (s *Service) typeSet(ctx context.Context) (map[string]bool, error) {
	types, err := s.cfg.Store.GPUTypes(ctx)
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(types))
	for _, t := range types {
		set[t.ID] = true
	}
	return set, nil
}

// toGPUs checks an agent's inventory against the catalog.
func toGPUs(in []agentproto.GPUInfo, types map[string]bool) ([]gpurent.GPU, error) {
	out := make([]gpurent.GPU, 0, len(in))
	seen := map[string]bool{}
	for _, g := range in {
		if g.UUID == "" || seen[g.UUID] {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "GPU UUID empty or repeated: %q", g.UUID)
		}
		seen[g.UUID] = true
		if !types[g.Type] {
			return nil, gpurent.Errorf(gpurent.CodeInvalid,
				"GPU %s (%s) is of type %q, which the catalog does not have; an operator must add the type first", g.UUID, g.Name, g.Type)
		}
		health := gpurent.GPUHealth(g.Health)
		if health == "" {
			health = gpurent.GPUHealthy
		}
		out = append(out, gpurent.GPU{ID: g.UUID, Index: g.Index, TypeID: g.Type, MemoryMiB: g.MemoryMiB,
			Health: health, TopoGroup: g.TopoGroup, NUMANode: g.NUMANode})
	}
	return out, nil
}

// AuthenticateAgent returns the host whose agent holds token.
func (s *Service) AuthenticateAgent(ctx context.Context, token string) (*gpurent.Host, error) {
	if token == "" {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "agent token required")
	}
	h, err := s.cfg.Store.HostByAgentTokenHash(ctx, HashToken(token))
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "unknown agent token; register again with the join token")
	}
	return h, err
}

// Report records an agent's heartbeat and GPU inventory.
func (s *Service) Report(ctx context.Context, host *gpurent.Host, rep agentproto.Report) error {
	now := s.cfg.Now().UTC()
	changed := host.LastSeenAt == nil || now.Sub(*host.LastSeenAt) > s.cfg.HostTimeout
	if rep.GPUs != nil {
		current, err := s.cfg.Store.HostByID(ctx, host.ID)
		if err != nil {
			return err
		}
		if inventoryChanged(current.GPUs, rep.GPUs) {
			types, err := s.typeSet(ctx)
			if err != nil {
				return err
			}
			gpus, err := toGPUs(rep.GPUs, types)
			if err != nil {
				return err
			}
			err = s.cfg.Store.SyncHostGPUs(ctx, host.ID, keepOperatorHealth(current.GPUs, gpus))
			switch {
			case gpurent.IsCode(err, gpurent.CodeConflict):
				// A GPU UUID another live host holds: the inventory is
				// refused whole (nothing moves); the rest of the report
				// (heartbeat, instances, usage) goes on.
				s.cfg.Logger.Warn("host inventory refused: it claims a GPU another host holds", "host", host.ID, "name", host.Name, "err", err)
			case err != nil:
				return err
			default:
				changed = true
			}
		}
	}
	if rep.AccessAddr != "" && (rep.AccessAddr != host.AccessAddr || rep.AccessHostKey != host.AccessHostKey) {
		if err := s.cfg.Store.SetHostAccess(ctx, host.ID, rep.AccessAddr, rep.AccessHostKey); err != nil {
			return err
		}
		s.cfg.Logger.Info("host access server", "host", host.ID, "addr", rep.AccessAddr)
	}
	if rep.Images != nil {
		// Sent only when it changed: placements prefer the hosts that
		// hold a rent's image.
		refs := rep.Images.Refs
		if len(refs) > MaxHeldImages {
			s.cfg.Logger.Warn("host reports more held images than kept; the rest are ignored", "host", host.ID, "images", len(refs))
			refs = refs[:MaxHeldImages]
		}
		refs = slices.DeleteFunc(slices.Clone(refs), func(r string) bool { return r == "" || len(r) > 255 })
		if err := s.cfg.Store.SetHostImages(ctx, host.ID, refs); err != nil {
			return err
		}
		changed = true
	}
	if err := s.cfg.Store.TouchHost(ctx, host.ID, now); err != nil {
		return err
	}
	if changed { // new GPUs, or a host back from silence: placements see it at once
		s.cfg.OnChange()
	}
	return nil
}

// MaxHeldImages bounds the held images kept per host (an agent is not
// trusted to send a reasonable list).
const MaxHeldImages = 256

// keepOperatorHealth keeps a health an operator or the health rules set
// (cordoned, failed, retired, degraded) when the agent reports the GPU as
// merely present and healthy.
func keepOperatorHealth(have, got []gpurent.GPU) []gpurent.GPU {
	prev := make(map[string]gpurent.GPUHealth, len(have))
	for _, g := range have {
		prev[g.ID] = g.Health
	}
	for i, g := range got {
		switch h := prev[g.ID]; h {
		case gpurent.GPUCordoned, gpurent.GPUFailed, gpurent.GPURetired, gpurent.GPUDegraded:
			if g.Health == gpurent.GPUHealthy {
				got[i].Health = h
			}
		}
	}
	return got
}

func inventoryChanged(have []gpurent.GPU, got []agentproto.GPUInfo) bool {
	byID := make(map[string]gpurent.GPU, len(have))
	present := 0
	for _, g := range have {
		byID[g.ID] = g
		if g.Health != gpurent.GPUMissing {
			present++
		}
	}
	if present != len(got) {
		return true
	}
	for _, g := range got {
		h, ok := byID[g.UUID]
		if !ok || h.Index != g.Index || h.TypeID != g.Type || h.TopoGroup != g.TopoGroup || h.Health == gpurent.GPUMissing {
			return true
		}
	}
	return false
}

func requireOperator(acc *gpurent.Account) error {
	if acc == nil {
		return gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	if acc.Role != gpurent.RoleOperator {
		return gpurent.Errorf(gpurent.CodeForbidden, "operators only")
	}
	return nil
}

// Hosts lists every host with its GPUs (operators only).
func (s *Service) Hosts(ctx context.Context, acc *gpurent.Account) ([]gpurent.Host, error) {
	if err := requireOperator(acc); err != nil {
		return nil, err
	}
	return s.cfg.Store.ListHosts(ctx)
}

// SetHostState cordons, uncordons (ready) or drains a host (operators only).
func (s *Service) SetHostState(ctx context.Context, acc *gpurent.Account, hostID string, state gpurent.HostState) (*gpurent.Host, error) {
	if err := requireOperator(acc); err != nil {
		return nil, err
	}
	switch state {
	case gpurent.HostReady, gpurent.HostCordoned, gpurent.HostDraining:
	default:
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "host state must be ready, cordoned or draining, got %q", state)
	}
	if err := s.cfg.Store.SetHostState(ctx, hostID, state); err != nil {
		if gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, gpurent.Errorf(gpurent.CodeNotFound, "host %q not found", hostID)
		}
		return nil, err
	}
	s.cfg.Logger.Info("host state set", "host", hostID, "state", state, "by", acc.ID)
	s.cfg.OnChange()
	return s.cfg.Store.HostByID(ctx, hostID)
}

// Online says whether the host's agent was heard from recently.
func (s *Service) Online(h *gpurent.Host) bool {
	return h.LastSeenAt != nil && s.cfg.Now().Sub(*h.LastSeenAt) <= s.cfg.HostTimeout
}

// GPUTypes lists every GPU type with its availability now: healthy GPUs on
// ready hosts whose agents are online count; free ones are not held.
func (s *Service) GPUTypes(ctx context.Context) ([]Availability, error) {
	types, err := s.cfg.Store.GPUTypes(ctx)
	if err != nil {
		return nil, err
	}
	hosts, err := s.cfg.Store.ListHosts(ctx)
	if err != nil {
		return nil, err
	}
	type key struct{ typ, zone string }
	zones := map[key]*ZoneAvailability{}
	for i := range hosts {
		h := &hosts[i]
		usable := h.State == gpurent.HostReady && s.Online(h)
		free := map[string]int{}
		for _, g := range h.GPUs {
			if g.Health != gpurent.GPUHealthy {
				continue
			}
			k := key{g.TypeID, h.ZoneID}
			z := zones[k]
			if z == nil {
				z = &ZoneAvailability{ZoneID: h.ZoneID}
				zones[k] = z
			}
			z.Total++
			// Free at full price: not rented, not under a benchmark job,
			// not listed as degraded (rented only on request).
			if usable && g.AllocationID == "" && g.BenchJobID == "" && !g.Degraded {
				z.Free++
				free[g.TypeID]++
			}
		}
		for typ, n := range free {
			if z := zones[key{typ, h.ZoneID}]; n > z.MaxPerHost {
				z.MaxPerHost = n
			}
		}
	}
	out := make([]Availability, 0, len(types))
	for _, t := range types {
		a := Availability{Type: t, Zones: []ZoneAvailability{}}
		for k, z := range zones {
			if k.typ == t.ID {
				a.Zones = append(a.Zones, *z)
				a.Total += z.Total
				a.Free += z.Free
			}
		}
		sort.Slice(a.Zones, func(i, j int) bool { return a.Zones[i].ZoneID < a.Zones[j].ZoneID })
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return strings.Compare(out[i].Type.ID, out[j].Type.ID) < 0 })
	return out, nil
}

// Zones lists the zones.
func (s *Service) Zones(ctx context.Context) ([]gpurent.Zone, error) {
	return s.cfg.Store.Zones(ctx)
}

// maxProbeURL bounds a zone's probe URL.
const maxProbeURL = 512

// CheckProbeURL says whether raw can be a zone's probe endpoint: an
// absolute http(s) URL with a host, no credentials and no fragment, which
// a customer's browser fetches to time its way to the zone ("" is none).
func CheckProbeURL(raw string) error {
	if raw == "" {
		return nil
	}
	bad := func(why string) error {
		return gpurent.Errorf(gpurent.CodeInvalid, "probe URL %q: %s", raw, why)
	}
	if len(raw) > maxProbeURL {
		return gpurent.Errorf(gpurent.CodeInvalid, "a probe URL is at most %d characters", maxProbeURL)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return bad("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("want http:// or https://")
	case u.Host == "" || u.Hostname() == "":
		return bad("no host")
	case u.User != nil:
		return bad("no credentials in a URL every visitor's browser sees")
	case u.Fragment != "" || strings.HasSuffix(raw, "#"):
		return bad("no fragment")
	case strings.ContainsAny(raw, " \t\r\n\"'<>"):
		return bad("spaces, quotes and angle brackets must be escaped")
	case !probeHost(u.Hostname()):
		return bad("the host must be a DNS name or an IP address")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("the port must be 1 to 65535")
		}
	}
	return nil
}

// probeHost says whether h is an IP address or a DNS name (letters,
// digits, hyphens and dots): the origin goes into the console's
// Content-Security-Policy, where anything else could change its meaning.
func probeHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// SetZoneProbe sets the endpoint at a zone's site that customers' browsers
// time for the zone latency test ("" removes it: the test then times the
// control plane and says so). Operators only.
func (s *Service) SetZoneProbe(ctx context.Context, acc *gpurent.Account, zoneID, probeURL string) (*gpurent.Zone, error) {
	if err := requireOperator(acc); err != nil {
		return nil, err
	}
	if err := CheckProbeURL(probeURL); err != nil {
		return nil, err
	}
	var out *gpurent.Zone
	err := s.cfg.Store.InTx(ctx, func(q gpurent.Queries) error {
		z, err := q.Zone(ctx, zoneID)
		if err != nil {
			if gpurent.IsCode(err, gpurent.CodeNotFound) {
				return gpurent.Errorf(gpurent.CodeNotFound, "zone %q not found", zoneID)
			}
			return err
		}
		z.ProbeURL = probeURL
		if err := q.UpsertZone(ctx, *z); err != nil {
			return err
		}
		out = z
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.cfg.Logger.Info("zone probe set", "zone", zoneID, "probe_url", probeURL, "by", acc.ID)
	return out, nil
}
