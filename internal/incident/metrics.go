package incident

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the platform's own counters.
type metrics struct {
	events    prometheus.Counter
	incidents *prometheus.CounterVec
	failovers prometheus.Counter
	credits   prometheus.Counter
	creditFen prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		events: prometheus.NewCounter(prometheus.CounterOpts{Name: "gpurent_gpu_health_events_total",
			Help: "GPU health events (Xids, ECC, lost GPUs, findings) stored from the agents."}),
		incidents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpurent_incidents_total",
			Help: "Platform incidents opened on instances, by fault class."}, []string{"class"}),
		failovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "gpurent_failovers_total",
			Help: "Failovers started after a fault."}),
		credits: prometheus.NewCounter(prometheus.CounterOpts{Name: "gpurent_sla_credits_posted_total",
			Help: "SLA credits posted, one per incident at most."}),
		creditFen: prometheus.NewCounter(prometheus.CounterOpts{Name: "gpurent_sla_credit_fen_total",
			Help: "SLA credit posted, in fen."}),
	}
}

// The per-GPU series, named as NVIDIA's dcgm-exporter names them, with its
// labels, so that existing Grafana dashboards work.
var (
	dcgmLabels = []string{"gpu", "UUID", "device", "modelName", "Hostname"}
	dcgmUtil   = prometheus.NewDesc("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", dcgmLabels, nil)
	dcgmTemp   = prometheus.NewDesc("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", dcgmLabels, nil)
	dcgmPower  = prometheus.NewDesc("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", dcgmLabels, nil)
	dcgmFBUsed = prometheus.NewDesc("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", dcgmLabels, nil)
	dcgmXid    = prometheus.NewDesc("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", dcgmLabels, nil)
	dcgmSBE    = prometheus.NewDesc("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Total number of single-bit volatile ECC errors.", dcgmLabels, nil)
	dcgmDBE    = prometheus.NewDesc("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors.", dcgmLabels, nil)
	dcgmClocks = prometheus.NewDesc("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Current clock throttle reasons (a bitmask).", dcgmLabels, nil)
	openDesc   = prometheus.NewDesc("gpurent_incidents_open", "Incidents open now on instances.", nil, nil)
)

// Collector exposes the platform's counters and every GPU's latest
// telemetry to Prometheus.
func (s *Service) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Service }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	m := c.s.metrics
	m.events.Describe(ch)
	m.incidents.Describe(ch)
	m.failovers.Describe(ch)
	m.credits.Describe(ch)
	m.creditFen.Describe(ch)
	for _, d := range []*prometheus.Desc{dcgmUtil, dcgmTemp, dcgmPower, dcgmFBUsed, dcgmXid, dcgmSBE, dcgmDBE, dcgmClocks, openDesc} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	m := c.s.metrics
	m.events.Collect(ch)
	m.incidents.Collect(ch)
	m.failovers.Collect(ch)
	m.credits.Collect(ch)
	m.creditFen.Collect(ch)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	for uuid, x := range c.s.samples {
		if x.host == nil {
			continue
		}
		labels := []string{strconv.Itoa(x.index), uuid, "nvidia" + strconv.Itoa(x.index), x.model, x.host.Name}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		gauge(dcgmUtil, float64(x.sample.UtilPercent))
		gauge(dcgmTemp, float64(x.sample.TemperatureC))
		gauge(dcgmPower, x.sample.PowerW)
		gauge(dcgmFBUsed, float64(x.sample.MemUsedMiB))
		gauge(dcgmXid, float64(x.sample.XidLast))
		gauge(dcgmClocks, float64(x.sample.ThrottleMask))
		ch <- prometheus.MustNewConstMetric(dcgmSBE, prometheus.CounterValue, float64(x.sample.ECCSingleBit), labels...)
		ch <- prometheus.MustNewConstMetric(dcgmDBE, prometheus.CounterValue, float64(x.sample.ECCDoubleBit), labels...)
	}
	ch <- prometheus.MustNewConstMetric(openDesc, prometheus.GaugeValue, float64(c.s.openCount))
}

// noteXid records a GPU's last Xid for DCGM_FI_DEV_XID_ERRORS.
func (s *Service) noteXid(uuid string, xid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.samples[uuid]
	x.sample.XidLast = xid
	s.samples[uuid] = x
}
