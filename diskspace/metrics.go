package diskspace

import "github.com/prometheus/client_golang/prometheus"

var (
	freeDesc = prometheus.NewDesc("metad_disk_free_bytes",
		"Bytes an unprivileged writer may still use on the data dir's filesystem, at the last check.", nil, nil)
	reserveDesc = prometheus.NewDesc("metad_disk_reserve_bytes",
		"Free bytes below which writes that grow the state are refused (--disk-reserve).", nil, nil)
	lowDesc = prometheus.NewDesc("metad_disk_low",
		"1 while the data dir's filesystem is below its reserve and growth is refused.", nil, nil)
)

// Collector exports the guard's last verdict.
func (g *Guard) Collector() prometheus.Collector { return collector{g} }

type collector struct{ g *Guard }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- freeDesc
	ch <- reserveDesc
	ch <- lowDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.g.State()
	low := 0.0
	if st.Low {
		low = 1
	}
	ch <- prometheus.MustNewConstMetric(freeDesc, prometheus.GaugeValue, float64(st.Free))
	ch <- prometheus.MustNewConstMetric(reserveDesc, prometheus.GaugeValue, float64(c.g.cfg.Reserve))
	ch <- prometheus.MustNewConstMetric(lowDesc, prometheus.GaugeValue, low)
}
