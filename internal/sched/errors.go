package sched

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent"
)

// ErrNoCapacity is matched (errors.Is) by every *NoCapacityError.
var ErrNoCapacity = errors.New("sched: no capacity")

// ErrInvalidRequest is matched (errors.Is) by the error Place answers for a
// malformed request (no type, a negative count, negative CPU or memory, a
// degraded listing asked for no GPUs). That error carries
// gpurent.CodeInvalid.
var ErrInvalidRequest = errors.New("sched: invalid request")

// Reason says why a request could not be placed.
type Reason string

// The reasons, in the order Place checks them.
const (
	// ReasonHostNotFound: the request names a host that is not in the
	// snapshot (or not in the requested zone).
	ReasonHostNotFound Reason = "host_not_found"
	// ReasonUnknownType: no host in the snapshot has a GPU of the type.
	ReasonUnknownType Reason = "unknown_type"
	// ReasonNoHost: the type exists, but no host in the requested zone (or
	// the requested host) has a GPU of it.
	ReasonNoHost Reason = "no_host"
	// ReasonNotSchedulable: every such host is cordoned, draining or down.
	ReasonNotSchedulable Reason = "not_schedulable"
	// ReasonNotEnoughGPUs: no schedulable host has Count free, healthy GPUs
	// of the type; MostFree is the best one host offers.
	ReasonNotEnoughGPUs Reason = "not_enough_gpus"
	// ReasonCPU: hosts with the GPUs exist, none has the CPU free.
	ReasonCPU Reason = "cpu"
	// ReasonMemory: hosts with the GPUs exist, none has the memory free.
	ReasonMemory Reason = "memory"
	// ReasonCPUAndMemory: some host has the CPU and some the memory, but
	// none with the GPUs has both.
	ReasonCPUAndMemory Reason = "cpu_and_memory"
)

// NoCapacityError says why a valid request fits nowhere. Its Error text is
// Message, written for the customer. It matches ErrNoCapacity, and its code
// (gpurent.ErrorCode) is gpurent.CodeUnavailable, also for a request pinned
// to a host: the caller knows the context and may answer otherwise (a
// restart on the same host is a conflict).
type NoCapacityError struct {
	Reason Reason
	Req    Request
	// MostFree is the largest number of free, healthy GPUs of the type on
	// one schedulable host in scope (zone and host of the request).
	MostFree int
	// LargestHost is the largest number of GPUs of the type, in any state,
	// on one schedulable host in scope.
	LargestHost int
	// MostCPUFree and MostMemFreeMiB are the most CPU and memory free on a
	// host that has the GPUs (reasons cpu, memory, cpu_and_memory).
	MostCPUFree    int64
	MostMemFreeMiB int64
	Message        string
}

func (e *NoCapacityError) Error() string { return e.Message }

// Unwrap exposes ErrNoCapacity and a *gpurent.Error (unavailable, Message),
// so gpurent.ErrorCode and gpurent.ErrorMessage work on the error as is.
func (e *NoCapacityError) Unwrap() []error {
	return []error{ErrNoCapacity, gpurent.Errorf(gpurent.CodeUnavailable, "%s", e.Message)}
}

// invalid builds the error for a malformed request.
func invalid(format string, args ...any) error {
	return gpurent.WrapError(gpurent.CodeInvalid, ErrInvalidRequest, format, args...)
}

// validate checks the request's own fields.
func validate(req *Request) error {
	switch {
	case req.TypeID == "":
		return invalid("a GPU type is required")
	case req.Count < 0:
		return invalid("GPU count must not be negative, got %d", req.Count)
	case req.CPUMilli < 0:
		return invalid("CPU must not be negative, got %dm", req.CPUMilli)
	case req.MemoryMiB < 0:
		return invalid("memory must not be negative, got %d MiB", req.MemoryMiB)
	case req.Degraded && req.Count == 0:
		return invalid("a degraded listing is of GPUs: ask for at least one")
	}
	return nil
}

// diagnosis is what a second pass over the snapshot learns after a failed
// placement.
type diagnosis struct {
	hostFound    bool // the requested host exists in scope (HostID set)
	typeAnywhere bool // some host anywhere has a GPU of the type
	inScope      int  // hosts in scope with a GPU of the type
	schedulable  int  // of those, schedulable
	mostFree     int
	largestHost  int
	gpuFit       int // schedulable hosts in scope with Count usable GPUs
	mostCPU      int64
	mostMem      int64
	cpuOK, memOK bool // some gpuFit host has enough CPU / memory
	// otherFit: schedulable hosts in scope with Count usable GPUs of the
	// type in the other listing (degraded for a full-price request and
	// the reverse), to point the customer at them.
	otherFit int
}

// diagnose explains why nothing fits. It runs only after Place found no
// host, so it may take its time.
func diagnose(req *Request, hosts []Host) *NoCapacityError {
	var d diagnosis
	for i := range hosts {
		h := &hosts[i]
		inZone := req.ZoneID == "" || h.ZoneID == req.ZoneID
		if h.ID == req.ExcludeHostID {
			continue
		}
		isHost := req.HostID == "" || h.ID == req.HostID
		if req.HostID != "" && isHost && inZone {
			d.hostFound = true
		}
		total, usable, otherUsable := 0, 0, 0
		for j := range h.GPUs {
			g := &h.GPUs[j]
			if g.TypeID != req.TypeID {
				continue
			}
			if g.Degraded != req.Degraded {
				if g.Free && g.Healthy {
					otherUsable++
				}
				continue
			}
			total++
			if g.Free && g.Healthy {
				usable++
			}
		}
		if h.Schedulable && inZone && isHost && req.Count > 0 && otherUsable >= req.Count {
			d.otherFit++
		}
		if total == 0 && req.Count > 0 {
			continue // no-GPU requests (count 0) may go to any host
		}
		d.typeAnywhere = true
		if !inZone || !isHost {
			continue
		}
		d.inScope++
		if !h.Schedulable {
			continue
		}
		d.schedulable++
		d.mostFree = max(d.mostFree, usable)
		d.largestHost = max(d.largestHost, total)
		if usable < req.Count {
			continue
		}
		if d.gpuFit == 0 {
			d.mostCPU, d.mostMem = h.CPUFree, h.MemFreeMiB
		}
		d.gpuFit++
		d.mostCPU = max(d.mostCPU, h.CPUFree)
		d.mostMem = max(d.mostMem, h.MemFreeMiB)
		d.cpuOK = d.cpuOK || h.CPUFree >= req.CPUMilli
		d.memOK = d.memOK || h.MemFreeMiB >= req.MemoryMiB
	}

	e := &NoCapacityError{Req: *req, MostFree: d.mostFree, LargestHost: d.largestHost,
		MostCPUFree: d.mostCPU, MostMemFreeMiB: d.mostMem}
	t := typeLabel(req)
	switch {
	case req.HostID != "" && !d.hostFound:
		e.Reason = ReasonHostNotFound
		if req.ZoneID != "" {
			e.Message = fmt.Sprintf("host %s is not in service in zone %s", req.HostID, req.ZoneID)
		} else {
			e.Message = fmt.Sprintf("host %s is not in service", req.HostID)
		}
	case !d.typeAnywhere:
		e.Reason = ReasonUnknownType
		e.Message = fmt.Sprintf("sold out: no %s GPUs are in service in any zone", t)
	case d.inScope == 0:
		e.Reason = ReasonNoHost
		if req.HostID != "" {
			e.Message = fmt.Sprintf("host %s has no %s GPUs", req.HostID, t)
		} else {
			e.Message = fmt.Sprintf("sold out: %s has no %s GPUs", where(req), t)
		}
	case d.schedulable == 0:
		e.Reason = ReasonNotSchedulable
		if req.HostID != "" {
			e.Message = fmt.Sprintf("host %s is not taking new instances (cordoned, draining or down)", req.HostID)
		} else {
			e.Message = fmt.Sprintf("sold out: every host with %s GPUs in %s is closed to new instances (cordoned, draining or down)", t, where(req))
		}
	case d.gpuFit == 0:
		e.Reason = ReasonNotEnoughGPUs
		e.Message = notEnoughMessage(req, &d)
	default:
		e.Reason, e.Message = resourceMessage(req, &d)
	}
	if d.gpuFit == 0 && d.otherFit > 0 {
		if req.Degraded {
			e.Message += fmt.Sprintf("; %d %s GPUs at the full price are free on one host", req.Count, req.TypeID)
		} else {
			e.Message += fmt.Sprintf("; %d degraded %s GPUs (slower, at a lower price) are free on one host: ask for degraded GPUs to take them", req.Count, req.TypeID)
		}
	}
	return e
}

// typeLabel names the GPUs a request asks for: the type, "degraded" in
// front when it asks for the degraded listing.
func typeLabel(req *Request) string {
	if req.Degraded {
		return "degraded " + req.TypeID
	}
	return req.TypeID
}

// resourceMessage explains a shortage of CPU or memory on the hosts that
// have the GPUs.
func resourceMessage(req *Request, d *diagnosis) (Reason, string) {
	reason, what := ReasonCPUAndMemory, "CPU and memory"
	needS, freeS := cores(req.CPUMilli)+" and "+mebibytes(req.MemoryMiB), ""
	switch {
	case !d.cpuOK:
		reason, what = ReasonCPU, "CPU"
		needS, freeS = cores(req.CPUMilli), cores(d.mostCPU)
	case !d.memOK:
		reason, what = ReasonMemory, "memory"
		needS, freeS = mebibytes(req.MemoryMiB), mebibytes(d.mostMem)
	}
	gpus := fmt.Sprintf("%d free %s GPU%s", req.Count, typeLabel(req), plural(req.Count))
	if req.Count == 0 {
		if req.HostID != "" {
			return reason, fmt.Sprintf("host %s has not enough %s for a no-GPU instance: %s needed", req.HostID, what, needS)
		}
		return reason, fmt.Sprintf("sold out: no host in %s has %s free for a no-GPU instance: %s needed", where(req), what, needS)
	}
	if req.HostID != "" {
		// One host: it would fit if both were enough, so freeS is set.
		return reason, fmt.Sprintf("host %s has %s but not enough %s: %s needed, %s free",
			req.HostID, gpus, what, needS, freeS)
	}
	if freeS == "" {
		return reason, fmt.Sprintf("sold out: no host with %s in %s has %s free together: %s needed",
			gpus, where(req), what, needS)
	}
	return reason, fmt.Sprintf("sold out: hosts with %s in %s lack %s: %s needed, at most %s free",
		gpus, where(req), what, needS, freeS)
}

func notEnoughMessage(req *Request, d *diagnosis) string {
	t := typeLabel(req)
	if req.HostID != "" {
		if req.Count > d.largestHost {
			return fmt.Sprintf("host %s has %d %s GPU%s in all, %d requested",
				req.HostID, d.largestHost, t, plural(d.largestHost), req.Count)
		}
		return fmt.Sprintf("host %s has %d free %s GPU%s, %d requested",
			req.HostID, d.mostFree, t, plural(d.mostFree), req.Count)
	}
	if req.Count > d.largestHost {
		return fmt.Sprintf("sold out: no host in %s has %d %s GPUs; an instance's GPUs are on one host and the largest has %d",
			where(req), req.Count, t, d.largestHost)
	}
	if d.mostFree == 0 {
		return fmt.Sprintf("sold out: no %s GPU in %s is free", t, where(req))
	}
	return fmt.Sprintf("sold out: no host in %s has %d free %s GPUs; most free on one host: %d",
		where(req), req.Count, t, d.mostFree)
}

// where names the zone part of the request's scope.
func where(req *Request) string {
	if req.ZoneID == "" {
		return "any zone"
	}
	return "zone " + req.ZoneID
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// cores writes milli-CPUs as cores: 32000 → "32 cores", 1500 → "1.5 cores".
func cores(milli int64) string {
	if milli < 0 {
		milli = 0
	}
	s := strconv.FormatInt(milli/1000, 10)
	if frac := milli % 1000; frac != 0 {
		f := strings.TrimRight(fmt.Sprintf("%03d", frac), "0")
		s += "." + f
	}
	if s == "1" {
		return "1 core"
	}
	return s + " cores"
}

// mebibytes writes MiB as GiB when whole: 262144 → "256 GiB".
func mebibytes(mib int64) string {
	if mib < 0 {
		mib = 0
	}
	if mib%1024 == 0 {
		return strconv.FormatInt(mib/1024, 10) + " GiB"
	}
	return strconv.FormatInt(mib, 10) + " MiB"
}
