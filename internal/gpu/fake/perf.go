package fake

import (
	"github.com/gpurent/gpurent"
)

// MaxPerformance is the highest factor SetPerformance takes: a card twice as
// fast as a healthy one of its type.
const MaxPerformance = 2.0

// SetPerformance scripts how the card uuid measures, as a factor of the
// healthy figures of its type: 1 is a healthy card, 0.85 one that measures
// 15% low (a throttling or degraded card), up to MaxPerformance. It fails
// with invalid for a factor outside (0, 2] and with not_found for a UUID
// that is not among the current devices. The factor outlives SetDevices.
func (p *Provider) SetPerformance(uuid string, factor float64) error {
	if !(factor > 0 && factor <= MaxPerformance) { // also refuses NaN
		return gpurent.Errorf(gpurent.CodeInvalid, "fake GPU %s: performance factor %v is not in (0, %v]", uuid, factor, MaxPerformance)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	known := false
	for _, d := range p.devices {
		if d.UUID == uuid {
			known = true
			break
		}
	}
	if !known {
		return gpurent.Errorf(gpurent.CodeNotFound, "fake GPU %s is not on this host", uuid)
	}
	if factor == 1 {
		delete(p.perf, uuid)
		return nil
	}
	if p.perf == nil {
		p.perf = map[string]float64{}
	}
	p.perf[uuid] = factor
	return nil
}

// Performance is the factor SetPerformance scripted for uuid, 1 when none
// was (any UUID, known or not, is healthy until scripted otherwise).
func (p *Provider) Performance(uuid string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f, ok := p.perf[uuid]; ok {
		return f
	}
	return 1
}
