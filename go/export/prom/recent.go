package prom

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// recentSpan is how far back the recent quantiles' summaries reach.
const recentSpan = time.Minute

// The quantiles of the recent summaries: a lane's three, a kernel's and
// the gaps' two (4 series each with _count and _sum, where kernels are
// many).
var (
	recentQuantiles = [...]float64{0.5, 0.9, 0.99}
	kernelQuantiles = [...]float64{0.5, 0.99}
)

// recent sends the summaries of the last recentSpan from the hub's recent
// windows (gpuspans.WindowsWithin, as the live page's last-minute column):
// for each lane, each kernel (with kernel histograms) and each device's
// gaps between kernels with spans in it, their quantiles over the windows
// of that minute and, as a summary's count and sum are, their totals since
// the hub began (s's aggregates). Classic-only servers read these where
// their buckets are too coarse for a quantile. It returns the lanes with
// spans in that minute.
func (c *Collector) recent(ch chan<- prometheus.Metric, s *gpuspans.Snapshot) map[seriesName]bool {
	ws := gpuspans.WindowsWithin(c.hub.Windows(), recentSpan)
	live := c.recentOf(ch, c.laneRecent, recentQuantiles[:], ws, func(w *gpuspans.Window) []gpuspans.WindowAggregate { return w.Lanes }, s.Lanes, true)
	if c.kernels {
		c.recentOf(ch, c.kernelRecent, kernelQuantiles[:], ws, func(w *gpuspans.Window) []gpuspans.WindowAggregate { return w.Kernels }, s.Kernels, true)
	}
	c.recentOf(ch, c.gapRecent, kernelQuantiles[:], ws, func(w *gpuspans.Window) []gpuspans.WindowAggregate { return w.Gaps }, s.GPUTime.Gaps, false)
	return live
}

// recentOf sends d's summaries: per device and name (labelled by name
// when named) in the windows ws (of), with totals from the aggregates,
// and returns the device and names it sent.
func (c *Collector) recentOf(ch chan<- prometheus.Metric, d *prometheus.Desc, quantiles []float64, ws []gpuspans.Window,
	of func(*gpuspans.Window) []gpuspans.WindowAggregate, totals []gpuspans.Aggregate, named bool) map[seriesName]bool {
	type key = seriesName
	merged := make(map[key]*gpuspans.Aggregate)
	var order []key
	for i := range ws {
		list := of(&ws[i])
		for j := range list {
			l := &list[j]
			k := key{device: l.Device, name: l.Name}
			a := merged[k]
			if a == nil {
				a = new(gpuspans.Aggregate)
				merged[k] = a
				order = append(order, k)
			}
			l.AddTo(a)
		}
	}
	if len(order) == 0 {
		return nil
	}
	sent := make(map[key]bool, len(order))
	total := make(map[key]*gpuspans.Aggregate, len(totals))
	for i := range totals {
		total[key{device: totals[i].Device, name: totals[i].Name}] = &totals[i]
	}
	for _, k := range order {
		a, t := merged[k], total[k]
		if a.Count == 0 || t == nil { // landed in a window, so in the aggregates: t is there
			continue
		}
		qs := make(map[float64]float64, len(quantiles))
		for _, q := range quantiles {
			qs[q] = a.Quantile(q).Seconds()
		}
		labels := []string{strconv.Itoa(k.device)}
		if named {
			labels = append(labels, k.name)
		}
		ch <- prometheus.MustNewConstSummary(d, t.Count, t.Sum.Seconds(), qs, labels...)
		sent[k] = true
	}
	return sent
}
