// Package faultrules turns what an agent sees on its GPUs into decisions: it
// classifies NVIDIA Xid errors, ECC and recovery events and telemetry
// findings into fault classes (gpurent.FaultClass), says who a fault is
// charged to and what the control plane does about it, and escalates
// repeat faults of one GPU to a return to the vendor (RMA).
//
// The package is pure: no clock, no I/O, no database. The Xid table is an
// embedded data file (xid_rules.json), one rule per Xid with its source;
// DefaultRules parses and validates it, ParseRules does the same for an
// operator's own file. The rules themselves, for operators, are in
// docs/health.md.
//
// The flow on the control plane:
//
//	bursts := faultrules.Bursts(gpuEvents, faultrules.BurstSilence)
//	v := rules.Classify(bursts[i])
//	v, why := faultrules.Escalate(v, pastIncidentsOfTheGPU, gpuID, now)
//
// and on the agent an Assessor turns an hour of telemetry samples into
// findings (throttling, a lowered power limit, a PCIe link below its
// maximum, NVLink links down, rows waiting to be remapped), each reported
// once when it starts.
package faultrules
