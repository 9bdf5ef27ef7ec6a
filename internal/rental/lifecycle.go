package rental

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/sched"
)

// claimAttempts bounds how often a rent re-plans after losing a race.
const claimAttempts = 8

// Rent validates, places and claims an instance. created is false when an
// earlier request with the same idempotency key made it.
func (s *Service) Rent(ctx context.Context, acc *gpurent.Account, r RentRequest) (d *Detail, created bool, err error) {
	if acc == nil {
		return nil, false, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	if err := s.resolveImage(ctx, &r); err != nil {
		return nil, false, err
	}
	if err := s.normalize(&r); err != nil {
		return nil, false, err
	}
	gt, err := s.snap.gpuType(ctx, r.TypeID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, false, gpurent.Errorf(gpurent.CodeInvalid, "unknown GPU type %q (see `gpurent gpus`)", r.TypeID)
	} else if err != nil {
		return nil, false, err
	}
	if r.ZoneID != "" {
		if _, err := s.store.Zone(ctx, r.ZoneID); gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, false, gpurent.Errorf(gpurent.CodeInvalid, "unknown zone %q (see `gpurent zones`)", r.ZoneID)
		} else if err != nil {
			return nil, false, err
		}
	}
	// A repeated key answers with what it made, before any placement (the
	// fleet may be full by now). Concurrent first uses of one key are
	// decided by the claim: (account, key) is unique.
	hash := r.hash()
	if r.IdempotencyKey != "" {
		defer s.keys.Lock(acc.ID + "\x00" + r.IdempotencyKey)()
		if d, err := s.byKey(ctx, acc, r.IdempotencyKey, hash); d != nil || err != nil {
			return d, false, err
		}
	}
	if err := s.checkFunds(ctx, acc, s.firstCharge(gt, r.Plan, r.Count)); err != nil {
		return nil, false, err
	}
	req := sched.Request{
		TypeID: gt.ID, Count: r.Count, ZoneID: r.ZoneID, Degraded: r.Degraded,
		CPUMilli: gt.CPUMilliPerGPU * int64(r.Count), MemoryMiB: gt.MemoryMiBPerGPU * int64(r.Count),
	}
	if r.Count == 0 {
		req.CPUMilli, req.MemoryMiB = s.cfg.NoGPUCPUMilli, s.cfg.NoGPUMemoryMiB
	}
	// Hosts that hold the image already (pre-pulled) start it without a
	// pull: placement prefers them.
	holding, err := s.store.HostsHolding(ctx, r.Image)
	if err != nil {
		return nil, false, err
	}
	if len(holding) > 0 {
		req.Prefer = sched.NewHostSet(holding...)
	}
	for attempt := 0; attempt < claimAttempts; attempt++ {
		p, res, err := s.snap.plan(ctx, req)
		if err != nil {
			if r.IdempotencyKey != "" && gpurent.IsCode(err, gpurent.CodeUnavailable) {
				// A concurrent request with the same key may have
				// taken the last GPUs: its instance is our answer.
				if d, kerr := s.byKey(ctx, acc, r.IdempotencyKey, hash); d != nil || kerr != nil {
					return d, false, kerr
				}
			}
			return nil, false, err
		}
		d, err := s.claimNew(ctx, acc, r, hash, req, p)
		res.Done(err == nil)
		switch {
		case err == nil:
			s.hub.notify(p.HostID)
			s.log.Info("instance placed", "instance", d.Instance.ID, "account", acc.ID, "host", p.HostID,
				"gpu_type", gt.ID, "count", r.Count)
			return d, true, nil
		case errors.Is(err, errGPUTaken), errors.Is(err, errListingChanged):
			// Another request or replica got there first, or a GPU's
			// listing changed since the snapshot: plan again.
			s.snap.invalidate()
		case errors.Is(err, errKeyTaken):
			d, err := s.byKey(ctx, acc, r.IdempotencyKey, hash)
			if d == nil && err == nil {
				err = gpurent.Errorf(gpurent.CodeConflict, "a request with this idempotency key is in progress")
			}
			return d, false, err
		default:
			return nil, false, err
		}
	}
	return nil, false, gpurent.Errorf(gpurent.CodeUnavailable,
		"sold out: the last free %s GPUs were taken by concurrent requests; try again", gt.ID)
}

var (
	errGPUTaken = errors.New("gpu taken")
	errKeyTaken = errors.New("idempotency key taken")
	// errListingChanged: a placed GPU is no longer of the listing the
	// request asked for (degraded or not) in the database.
	errListingChanged = errors.New("gpu listing changed")
)

// listingPermille checks, inside the claim's transaction, that every GPU
// of p is of the listing req asks for (degraded or not) as the database
// has it now, not as the snapshot had it, and answers the allocation's
// price share: the mean of the GPUs' shares in permille, rounded half up,
// 0 for the full price. A GPU without a certification is at the full
// price and not degraded.
func listingPermille(ctx context.Context, q gpurent.Queries, req sched.Request, p sched.Placement) (int, error) {
	if len(p.GPUIDs) == 0 {
		return 0, nil
	}
	certs, err := q.ListGPUCerts(ctx, p.HostID)
	if err != nil {
		return 0, err
	}
	shares := make([]int, 0, len(p.GPUIDs))
	for _, id := range p.GPUIDs {
		degraded, share := false, 1000
		for i := range certs {
			if certs[i].GPUID == id {
				degraded = certs[i].State == gpurent.CertDegraded
				share = sched.PriceShare(certs[i].PricePermille)
				break
			}
		}
		if degraded != req.Degraded {
			return 0, errListingChanged
		}
		shares = append(shares, share)
	}
	return meanPermille(shares), nil
}

// meanPermille is the mean of price shares in permille (each in 1..1000),
// rounded half up; 0 when it is the full price (1000) or there are none.
func meanPermille(shares []int) int {
	if len(shares) == 0 {
		return 0
	}
	sum := 0
	for _, p := range shares {
		sum += p
	}
	n := len(shares)
	m := (2*sum + n) / (2 * n)
	if m >= 1000 {
		return 0
	}
	return m
}

// claimNew writes the instance, its volume, its allocation and its first
// events in one transaction. The allocation's constraint decides races.
func (s *Service) claimNew(ctx context.Context, acc *gpurent.Account, r RentRequest, hash string, req sched.Request, p sched.Placement) (*Detail, error) {
	now := s.now().UTC()
	in := &gpurent.Instance{
		ID: gpurent.NewID(gpurent.PrefixInstance), AccountID: acc.ID, Name: r.Name, Image: r.Image,
		TypeID: r.TypeID, GPUCount: r.Count, ZoneID: r.ZoneID, HostID: p.HostID,
		State: gpurent.StateProvisioning, Plan: r.Plan, CPUMilli: req.CPUMilli, MemoryMiB: req.MemoryMiB,
		IdempotencyKey: r.IdempotencyKey, RequestHash: hash, CreatedAt: now, UpdatedAt: now,
		StartupCommand: r.StartupCommand,
	}
	if in.Name == "" {
		in.Name = fmt.Sprintf("%s-x%d-%s", r.TypeID, r.Count, in.ID[len(in.ID)-4:])
	}
	vol := &gpurent.Volume{ID: gpurent.NewID(gpurent.PrefixVolume), InstanceID: in.ID, AccountID: acc.ID,
		HostID: p.HostID, SizeGiB: r.VolumeGiB, CreatedAt: now}
	vol.Name = "gpurent-" + vol.ID
	in.VolumeID = vol.ID
	alloc := &gpurent.Allocation{ID: gpurent.NewID(gpurent.PrefixAllocation), InstanceID: in.ID,
		HostID: p.HostID, GPUIDs: p.GPUIDs, StartedAt: now, StartReason: "start"}
	hostName := p.HostID
	if h := s.snap.host(p.HostID); h != nil {
		hostName = h.Name
	}
	listing := r.TypeID
	if r.Degraded {
		listing = "degraded " + r.TypeID
	}
	events := []*gpurent.Event{
		NewEvent(in.ID, now, "created", "requested %d x %s, image %s", r.Count, listing, r.Image),
		NewEvent(in.ID, now, "placed", "placed on host %s, GPUs %s; provisioning", hostName, strings.Join(p.GPUIDs, ",")),
	}
	placed := events[1].Message
	collect, err := s.packageCollector(ctx)
	if err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(q gpurent.Queries) error {
		if err := q.CreateInstance(ctx, in); err != nil {
			if gpurent.IsCode(err, gpurent.CodeConflict) {
				return errKeyTaken
			}
			return err
		}
		if err := q.CreateVolume(ctx, vol); err != nil {
			return err
		}
		permille, err := listingPermille(ctx, q, req, p)
		if err != nil {
			return err
		}
		alloc.PricePermille = permille
		if permille > 0 {
			events[1].Message = placed + fmt.Sprintf("; degraded GPUs, billed at %d.%d%% of the list price", permille/10, permille%10)
		}
		if err := q.CreateAllocation(ctx, alloc); err != nil {
			if gpurent.IsCode(err, gpurent.CodeConflict) {
				return errGPUTaken
			}
			return err
		}
		// A package's first period is paid here or the claim is undone:
		// concurrent rents of one account are decided by the account's
		// lock that the charge takes.
		if err := collectPackage(ctx, q, collect, in); err != nil {
			return err
		}
		for _, e := range events {
			if err := q.AddEvent(ctx, e); err != nil {
				return err
			}
		}
		_, err = q.BumpHostGeneration(ctx, p.HostID)
		return err
	})
	if err != nil {
		return nil, err
	}
	in.AllocationID, in.GPUIDs = alloc.ID, alloc.GPUIDs
	if alloc.PricePermille > 0 {
		s.log.Info("degraded GPUs rented", "instance", in.ID, "price_permille", alloc.PricePermille)
	}
	// The answer is built from what was just written; only the host's
	// record comes from the snapshot (or, if it was dropped, the store).
	d := &Detail{Instance: *in, Volume: vol, Host: s.snap.host(p.HostID)}
	for _, e := range events {
		d.Events = append(d.Events, *e)
	}
	if d.Host == nil {
		h, err := s.store.HostByID(ctx, p.HostID)
		if err != nil {
			return nil, err
		}
		h.GPUs = nil
		d.Host = h
	}
	return d, nil
}

// byKey returns the instance an earlier request with this key made, nil if
// none; a different request under the same key is a conflict.
func (s *Service) byKey(ctx context.Context, acc *gpurent.Account, key, hash string) (*Detail, error) {
	in, err := s.store.InstanceByIdempotencyKey(ctx, acc.ID, key)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if in.RequestHash != hash {
		return nil, gpurent.Errorf(gpurent.CodeConflict, "idempotency key already used for a different request")
	}
	return s.detail(ctx, in)
}

// normalize fills defaults and validates a request.
func (s *Service) normalize(r *RentRequest) error {
	r.Name = strings.TrimSpace(r.Name)
	r.Image = strings.TrimSpace(r.Image)
	r.TypeID = strings.TrimSpace(r.TypeID)
	r.ZoneID = strings.TrimSpace(r.ZoneID)
	if r.Plan == "" {
		r.Plan = gpurent.PlanHourly
	}
	if r.VolumeGiB == 0 {
		r.VolumeGiB = s.cfg.DefaultVolumeGiB
	}
	switch {
	case r.TypeID == "":
		return gpurent.Errorf(gpurent.CodeInvalid, "gpu_type is required (see `gpurent gpus`)")
	case r.Count < 0:
		return gpurent.Errorf(gpurent.CodeInvalid, "gpu_count must not be negative, got %d", r.Count)
	case r.Count == 0 && r.Plan != gpurent.PlanHourly:
		return gpurent.Errorf(gpurent.CodeInvalid, "no-GPU mode (gpu_count 0) is billed by the second: plan must be hourly, got %q", r.Plan)
	case r.Degraded && r.Count == 0:
		return gpurent.Errorf(gpurent.CodeInvalid, "degraded is a listing of GPUs: gpu_count must be at least 1")
	case r.Degraded && r.Plan != gpurent.PlanHourly:
		return gpurent.Errorf(gpurent.CodeInvalid, "degraded GPUs are billed by the second at their listed share: plan must be hourly, got %q", r.Plan)
	case r.Count > s.cfg.MaxGPUsPerInstance:
		return gpurent.Errorf(gpurent.CodeInvalid, "gpu_count must be at most %d (one host), got %d", s.cfg.MaxGPUsPerInstance, r.Count)
	case r.Image == "":
		return gpurent.Errorf(gpurent.CodeInvalid, "image is required")
	case len(r.Image) > 255 || strings.IndexFunc(r.Image, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }) >= 0:
		return gpurent.Errorf(gpurent.CodeInvalid, "image must be a container image reference without spaces, at most 255 characters")
	case r.VolumeGiB < 1 || r.VolumeGiB > s.cfg.MaxVolumeGiB:
		return gpurent.Errorf(gpurent.CodeInvalid, "volume_gib must be between 1 and %d", s.cfg.MaxVolumeGiB)
	}
	switch r.Plan {
	case gpurent.PlanHourly, gpurent.PlanDaily, gpurent.PlanWeekly, gpurent.PlanMonthly:
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "plan must be hourly, daily, weekly or monthly, got %q", r.Plan)
	}
	if err := CheckStartupCommand(r.StartupCommand); err != nil {
		return err
	}
	if r.Name != "" && !validName(r.Name) {
		return gpurent.Errorf(gpurent.CodeInvalid, "name must be 1-63 letters, digits, '.', '_' or '-'")
	}
	return s.cfg.Images.Check(r.Image)
}

func validName(n string) bool {
	if len(n) > 63 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Get returns an instance the account owns (operators see all); another
// account's instance is not found.
func (s *Service) Get(ctx context.Context, acc *gpurent.Account, id string) (*Detail, error) {
	in, err := s.owned(ctx, s.store, acc, id)
	if err != nil {
		return nil, err
	}
	return s.detail(ctx, in)
}

// owned reads an instance the account may see.
func (s *Service) owned(ctx context.Context, q gpurent.InstanceStore, acc *gpurent.Account, id string) (*gpurent.Instance, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	in, err := q.InstanceByID(ctx, id)
	if err != nil {
		if gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, gpurent.Errorf(gpurent.CodeNotFound, "instance %q not found", id)
		}
		return nil, err
	}
	if in.AccountID != acc.ID && acc.Role != gpurent.RoleOperator {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "instance %q not found", id)
	}
	return in, nil
}

// detail adds the host, volume and events to an instance.
func (s *Service) detail(ctx context.Context, in *gpurent.Instance) (*Detail, error) {
	d := &Detail{Instance: *in}
	if in.HostID != "" {
		h, err := s.store.HostByID(ctx, in.HostID)
		if err != nil {
			return nil, err
		}
		h.GPUs = nil
		d.Host = h
	}
	if in.VolumeID != "" {
		v, err := s.store.VolumeByID(ctx, in.VolumeID)
		if err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, err
		}
		d.Volume = v
	}
	ev, err := s.store.ListEvents(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	d.Events = ev
	return d, nil
}

// List returns the account's instances, deleted ones left out; for an
// operator with all set, every account's. Events are not filled.
func (s *Service) List(ctx context.Context, acc *gpurent.Account, all bool) ([]Detail, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	f := gpurent.InstanceFilter{AccountID: acc.ID, ActiveOnly: true}
	if all {
		if acc.Role != gpurent.RoleOperator {
			return nil, gpurent.Errorf(gpurent.CodeForbidden, "only operators can list every account's instances")
		}
		f.AccountID = ""
	}
	list, err := s.store.ListInstances(ctx, f)
	if err != nil {
		return nil, err
	}
	hosts := map[string]*gpurent.Host{}
	out := make([]Detail, 0, len(list))
	for _, in := range list {
		d := Detail{Instance: in}
		if in.HostID != "" {
			h, ok := hosts[in.HostID]
			if !ok {
				if h, err = s.store.HostByID(ctx, in.HostID); err != nil {
					return nil, err
				}
				h.GPUs = nil
				hosts[in.HostID] = h
			}
			d.Host = h
		}
		if in.VolumeID != "" {
			if d.Volume, err = s.store.VolumeByID(ctx, in.VolumeID); err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
				return nil, err
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// change is one state change of an instance inside a transaction. It edits
// in and returns the event to record, or nil when nothing changes.
type change func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error)

// apply runs ch on the current instance in a transaction, retrying when
// another writer changed the instance meanwhile, then wakes the host's agent.
func (s *Service) apply(ctx context.Context, acc *gpurent.Account, id string, ch change) (*gpurent.Instance, error) {
	var out *gpurent.Instance
	var released bool
	for attempt := 0; ; attempt++ {
		released = false
		err := s.store.InTx(ctx, func(q gpurent.Queries) error {
			var in *gpurent.Instance
			var err error
			if acc != nil {
				in, err = s.owned(ctx, q, acc, id)
			} else {
				in, err = q.InstanceByID(ctx, id)
			}
			if err != nil {
				return err
			}
			before := in.AllocationID
			now := s.now().UTC()
			ev, err := ch(q, in, now)
			if err != nil || ev == nil {
				out = in
				return err
			}
			in.UpdatedAt = now
			if err := q.UpdateInstance(ctx, in); err != nil {
				if gpurent.IsCode(err, gpurent.CodeConflict) {
					return fmt.Errorf("%w: %w", errStale, err)
				}
				return err
			}
			if err := q.AddEvent(ctx, ev); err != nil {
				return err
			}
			if in.HostID != "" {
				if _, err := q.BumpHostGeneration(ctx, in.HostID); err != nil {
					return err
				}
			}
			released = before != "" && in.AllocationID == ""
			out = in
			return nil
		})
		if errors.Is(err, errStale) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	if released {
		s.snap.invalidate()
	}
	if out.HostID != "" {
		s.hub.notify(out.HostID)
	}
	return out, nil
}

// errStale marks a version conflict worth retrying.
var errStale = errors.New("stale instance")

// endAllocation releases the instance's GPUs.
func endAllocation(ctx context.Context, q gpurent.Queries, in *gpurent.Instance, now time.Time, reason string) error {
	if in.AllocationID == "" {
		return nil
	}
	if err := q.EndAllocation(ctx, in.AllocationID, now, reason); err != nil {
		return err
	}
	in.AllocationID, in.GPUIDs = "", nil
	return nil
}

// Stop asks the instance's agent to stop it; GPUs are released (hourly plan)
// once the agent reports it stopped. Stopping a stopped instance is a no-op.
func (s *Service) Stop(ctx context.Context, acc *gpurent.Account, id string) (*Detail, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	in, err := s.apply(ctx, acc, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		switch in.State {
		case gpurent.StateStopping, gpurent.StateStopped:
			return nil, nil
		}
		if op, err := q.ActiveOperation(ctx, in.ID); err == nil && op.Step != gpurent.StepQueued && op.Step != gpurent.StepCleanup {
			return nil, gpurent.Errorf(gpurent.CodeConflict,
				"instance %s is being moved (%s %s, %s): stop it once that finishes (it rolls back by itself if it cannot)", in.ID, op.Kind, op.ID, op.Step)
		} else if err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, err
		}
		switch in.State {
		case gpurent.StatePending, gpurent.StateProvisioning, gpurent.StateRunning:
			in.State, in.StateReason = gpurent.StateStopping, "stop requested"
			return NewEvent(in.ID, now, "stopping", "stop requested; data on the volume is kept"), nil
		case gpurent.StateFailed:
			in.State, in.StateReason = gpurent.StateStopped, "stopped after failure"
			return NewEvent(in.ID, now, "stopped", "stopped after failure"), nil
		default:
			return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s", in.ID, in.State)
		}
	})
	if err != nil {
		return nil, err
	}
	return s.detail(ctx, in)
}

// Start re-places a stopped instance on its host. If the host has no free
// GPUs of its type, it answers with a clear conflict.
func (s *Service) Start(ctx context.Context, acc *gpurent.Account, id string) (*Detail, error) {
	in, err := s.owned(ctx, s.store, acc, id)
	if err != nil {
		return nil, err
	}
	switch in.State {
	case gpurent.StateProvisioning, gpurent.StateRunning:
		return s.detail(ctx, in)
	case gpurent.StateStopped, gpurent.StateFailed:
	default:
		return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s; it can be started once stopped", in.ID, in.State)
	}
	// The start gate: an hour of the hourly price on top of what the
	// account's running instances burn; a package's periods are prepaid
	// (one due now is collected as the start claims, in startOn).
	need := int64(0)
	if in.Plan == gpurent.PlanHourly || in.Plan == "" {
		gt, err := s.snap.gpuType(ctx, in.TypeID)
		if err != nil {
			return nil, err
		}
		need = s.firstCharge(gt, gpurent.PlanHourly, in.GPUCount)
	}
	if err := s.checkFunds(ctx, acc, need); err != nil {
		return nil, err
	}
	var p sched.Placement
	if in.AllocationID == "" { // package plans keep theirs while stopped
		req := sched.Request{TypeID: in.TypeID, Count: in.GPUCount, HostID: in.HostID,
			CPUMilli: in.CPUMilli, MemoryMiB: in.MemoryMiB}
		for attempt := 0; ; attempt++ {
			var res *Reservation
			p, res, err = s.snap.plan(ctx, req)
			if err != nil {
				if gpurent.IsCode(err, gpurent.CodeUnavailable) {
					return nil, gpurent.Errorf(gpurent.CodeConflict,
						"cannot start on host %s: %s. The data stays on that host: start it elsewhere with --move, or --queue it to start when GPUs free up",
						in.HostID, gpurent.ErrorMessage(err))
				}
				return nil, err
			}
			out, err := s.startOn(ctx, acc, id, p)
			res.Done(err == nil)
			if errors.Is(err, errGPUTaken) {
				s.snap.invalidate()
				if attempt < claimAttempts {
					continue
				}
				return nil, gpurent.Errorf(gpurent.CodeConflict,
					"cannot start on host %s: its free GPUs were taken by concurrent requests; try again", in.HostID)
			}
			if err != nil {
				return nil, err
			}
			return s.detail(ctx, out)
		}
	}
	out, err := s.startOn(ctx, acc, id, p)
	if err != nil {
		return nil, err
	}
	return s.detail(ctx, out)
}

// startOn claims p (unless the instance still holds GPUs) and sets the
// instance provisioning.
func (s *Service) startOn(ctx context.Context, acc *gpurent.Account, id string, p sched.Placement) (*gpurent.Instance, error) {
	collect, err := s.packageCollector(ctx)
	if err != nil {
		return nil, err
	}
	return s.apply(ctx, acc, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		switch in.State {
		case gpurent.StateProvisioning, gpurent.StateRunning:
			return nil, nil
		case gpurent.StateStopped, gpurent.StateFailed:
		default:
			return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s", in.ID, in.State)
		}
		// A package period begun and not charged yet is collected
		// before the instance runs, or the start is refused.
		if err := collectPackage(ctx, q, collect, in); err != nil {
			return nil, err
		}
		if in.AllocationID == "" {
			if p.HostID == "" {
				return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s changed meanwhile; try again", in.ID)
			}
			a := &gpurent.Allocation{ID: gpurent.NewID(gpurent.PrefixAllocation), InstanceID: in.ID,
				HostID: p.HostID, GPUIDs: p.GPUIDs, StartedAt: now, StartReason: "start"}
			if err := q.CreateAllocation(ctx, a); err != nil {
				if gpurent.IsCode(err, gpurent.CodeConflict) {
					return nil, errGPUTaken
				}
				return nil, err
			}
			in.AllocationID, in.GPUIDs, in.HostID = a.ID, a.GPUIDs, p.HostID
		}
		in.State, in.StateReason = gpurent.StateProvisioning, "start requested"
		return NewEvent(in.ID, now, "starting", "start requested on host %s, GPUs %s; provisioning",
			in.HostID, strings.Join(in.GPUIDs, ",")), nil
	})
}

// Delete removes the instance and its volume.
func (s *Service) Delete(ctx context.Context, acc *gpurent.Account, id string) (*Detail, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	in, err := s.apply(ctx, acc, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		switch in.State {
		case gpurent.StateDeleting, gpurent.StateDeleted:
			return nil, nil
		}
		if err := s.abandon(ctx, q, in, now); err != nil {
			return nil, err
		}
		if in.HostID == "" { // never placed: nothing on any host to remove
			if err := finishDelete(ctx, q, in, now); err != nil {
				return nil, err
			}
			return NewEvent(in.ID, now, "deleted", "deleted"), nil
		}
		in.State, in.StateReason = gpurent.StateDeleting, "delete requested"
		return NewEvent(in.ID, now, "deleting", "delete requested; the container and its volume are being removed"), nil
	})
	if err != nil {
		return nil, err
	}
	return s.detail(ctx, in)
}

// finishDelete ends what the instance holds and marks it deleted.
func finishDelete(ctx context.Context, q gpurent.Queries, in *gpurent.Instance, now time.Time) error {
	if err := endAllocation(ctx, q, in, now, "delete"); err != nil {
		return err
	}
	if in.VolumeID != "" {
		if err := q.MarkVolumeDeleted(ctx, in.VolumeID, now); err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return err
		}
	}
	in.State, in.StateReason = gpurent.StateDeleted, ""
	return nil
}

// StopUnpaid stops an instance whose wallet could not pay for its usage:
// the system acting, gracefully, the volume kept; a stopped one on the
// hourly plan (a package that lapsed unpaid) has its GPUs released. Other
// states are left as they are.
func (s *Service) StopUnpaid(ctx context.Context, id string) error {
	_, err := s.apply(ctx, nil, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		if op, err := q.ActiveOperation(ctx, in.ID); err == nil && op.Step != gpurent.StepCleanup {
			return nil, nil // the next pass stops it once the move is over
		} else if err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, err
		}
		switch in.State {
		case gpurent.StateProvisioning, gpurent.StateRunning:
			in.State, in.StateReason = gpurent.StateStopping, "balance exhausted"
			return NewEvent(in.ID, now, "stopping", "the balance ran out: stopping gracefully; data on the volume is kept"), nil
		case gpurent.StateStopped, gpurent.StateFailed:
			// A stopped package whose period went unpaid is on the
			// hourly plan now: it holds its GPUs no longer.
			if in.Plan != gpurent.PlanHourly || in.AllocationID == "" {
				return nil, nil
			}
			if err := endAllocation(ctx, q, in, now, "unpaid"); err != nil {
				return nil, err
			}
			return NewEvent(in.ID, now, "released", "GPUs released: the package period went unpaid; volume kept"), nil
		}
		return nil, nil
	})
	return err
}

// firstCharge is what count GPUs cost up front: an hour on the hourly
// plan (of the no-GPU price for count 0), one period of a package.
func (s *Service) firstCharge(gt *gpurent.GPUType, plan gpurent.Plan, count int) int64 {
	n := int64(count)
	switch {
	case count == 0:
		return s.cfg.NoGPUHourFen
	case plan == gpurent.PlanDaily:
		return gt.PriceDailyFen * n
	case plan == gpurent.PlanWeekly:
		return gt.PriceWeeklyFen * n
	case plan == gpurent.PlanMonthly:
		return gt.PriceMonthlyFen * n
	}
	return gt.PriceHourlyFen * n
}

// packageCollector prepares, before a claim's transaction, what takes a
// package's due periods in it (nil: none configured).
func (s *Service) packageCollector(ctx context.Context) (Collect, error) {
	if s.cfg.Packages == nil || s.cfg.Prices == nil {
		return nil, nil
	}
	b, err := s.cfg.Prices.Book(ctx)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, q gpurent.Queries, in *gpurent.Instance) error {
		_, err := s.cfg.Packages.CollectDue(ctx, q, b, in)
		return err
	}, nil
}

// collectPackage takes the package instance's due periods through q with
// collect (see Config.Packages); nothing for the hourly plan.
func collectPackage(ctx context.Context, q gpurent.Queries, collect Collect, in *gpurent.Instance) error {
	if collect == nil || in.Plan == gpurent.PlanHourly || in.Plan == "" {
		return nil
	}
	return collect(ctx, q, in)
}

// checkFunds is the start gate: at least one hour of the list price must be
// spendable (operators rent without a wallet check: their usage is the
// house's).
func (s *Service) checkFunds(ctx context.Context, acc *gpurent.Account, hourFen int64) error {
	return s.checkFundsFor(ctx, acc, "", hourFen)
}

// checkFundsFor is checkFunds for a change of an instance that may burn
// the wallet now (an upgrade or move of a running one): its own hour is
// not kept back where the gate keeps one (FundsExcept).
func (s *Service) checkFundsFor(ctx context.Context, acc *gpurent.Account, instanceID string, hourFen int64) error {
	if s.cfg.Funds == nil || acc.Role == gpurent.RoleOperator {
		return nil
	}
	if f, ok := s.cfg.Funds.(FundsExcept); ok && instanceID != "" {
		return f.CheckFundsExcept(ctx, acc.ID, instanceID, hourFen)
	}
	return s.cfg.Funds.CheckFunds(ctx, acc.ID, hourFen)
}

// ReleaseIdleGPUs releases the GPUs a stopped instance holds once it is on
// the hourly plan (a package keeps them reserved while stopped; a plan
// change back to hourly ends that).
func (s *Service) ReleaseIdleGPUs(ctx context.Context, id string) error {
	_, err := s.apply(ctx, nil, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		if (in.State != gpurent.StateStopped && in.State != gpurent.StateFailed) || in.Plan != gpurent.PlanHourly || in.AllocationID == "" {
			return nil, nil
		}
		if err := endAllocation(ctx, q, in, now, "plan"); err != nil {
			return nil, err
		}
		return NewEvent(in.ID, now, "released", "GPUs released: the stopped instance is on the hourly plan now; volume kept"), nil
	})
	return err
}

// ReleaseUnpaid deletes a stopped instance and its volume for arrears left
// unpaid (the system acting, after notices). Other states are left alone.
func (s *Service) ReleaseUnpaid(ctx context.Context, id string) error {
	_, err := s.apply(ctx, nil, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		if in.State != gpurent.StateStopped && in.State != gpurent.StateFailed {
			return nil, nil
		}
		in.State, in.StateReason = gpurent.StateDeleting, "released: storage arrears unpaid"
		return NewEvent(in.ID, now, "deleting", "released after %d days of unpaid storage arrears; container and volume are removed",
			15), nil
	})
	return err
}
