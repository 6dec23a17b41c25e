package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuspans/gpuspans/go/cmd/gpuspans/internal/summary"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// shutdown lands what is still in flight, then closes the exporter, the
// GPU and the HTTP server, in that order. It returns the GPU's first
// error.
func (r *demoRun) shutdown() error {
	// Land what is still in flight: the GPU is idle once Wait returns, so
	// a few harvests finish it; then retire the recorder and close the pool
	// before the GPU's stream goes.
	werr := r.gpu.Wait()
	if r.reqs != nil {
		r.reqs.end() // their records come out as the last spans land
	}
	drain(r.hub)
	r.col.poll()
	r.hub.Uninstall(r.gpu.Device())
	drain(r.hub)
	if r.stopProfile != nil {
		r.stopProfile() // its last write has the windows the drains analysed
	}
	r.closeOTLP()
	r.gpuClosed = true
	cerr := r.gpu.Close()
	if r.srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = r.srv.Shutdown(sctx)
		cancel()
	}
	return firstErr(werr, cerr)
}

// closeOTLP ends the simulated requests and sends the exporter's last
// spans, if there is an exporter, and keeps what it did for the summary.
func (r *demoRun) closeOTLP() {
	if r.exp == nil {
		return
	}
	// The last spans go out now, with a few seconds for a slow collector.
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if cerr := r.exp.Close(cctx); cerr != nil {
		r.con.Printf("OTLP: closing the exporter: %v", cerr)
	}
	cancel()
	r.res.OTLP = r.exp.Stats()
	r.res.OTLPError = r.exp.LastError()
}

// drain harvests until nothing is in flight, for at most a second: spans
// that never complete (a wedged GPU) must not hang the exit.
func drain(hub *gpuspans.Hub) {
	limit := time.Now().Add(time.Second)
	for {
		hub.Harvest()
		if hub.Snapshot().Counters.InFlight == 0 || time.Now().After(limit) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// writeFiles writes the trace and the end of the span file, from the
// hub's final snapshot, which the summary then reports.
func (r *demoRun) writeFiles() error {
	r.res.Snapshot = r.hub.Snapshot()
	written, err := r.outs.finish(&r.res.Snapshot)
	r.res.TraceSpans, r.res.Unplaced, r.res.FileSpans = written.trace, written.unplaced, written.file
	return err
}

// firstErr returns the first of errs that is not nil: a run fails with
// the first thing that failed, whatever failed after it.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// report prints the end of run: why it stopped, where the files went, the
// counters that matter and the summary table.
func report(con *console, cfg *Config, res *Result, outs *outputs) {
	s := &res.Snapshot
	rate := 0.0
	if res.Elapsed > 0 {
		rate = float64(res.Steps) / res.Elapsed.Seconds()
	}
	con.Printf("stopped (%s) after %d steps in %v (%.1f steps/s)", res.StoppedWhy, res.Steps, res.Elapsed.Round(time.Millisecond), rate)
	c := &s.Counters
	con.Printf("spans: %d begun, %d landed, %d dropped (slot_busy %d, capturing %d, retired %d, leaked %d), %d errored, %d in flight",
		c.Begun, c.Landed, c.DroppedTotal(), c.Dropped[gpuspans.DropSlotBusy], c.Dropped[gpuspans.DropCapturing], c.Dropped[gpuspans.DropRetired], c.Dropped[gpuspans.DropLeaked], c.Errored, c.InFlight)
	for _, d := range s.Devices {
		if d.Err != nil {
			con.Printf("device %d: %s: %v", d.Device, d.State, d.Err)
		}
	}
	if line := whoseLine(&s.Requests); line != "" {
		con.Printf("%s", line)
	}
	if outs.tracePath != "" {
		left := ""
		if res.Unplaced > 0 {
			// The CUDA pool places a span on the host clock through the
			// anchor current when it began: spans begun before the pool's
			// first anchor completed have none.
			left = fmt.Sprintf("; %d left out, with no host start time", res.Unplaced)
		}
		con.Printf("trace: %d spans written to %s%s (open it in https://ui.perfetto.dev or chrome://tracing)", res.TraceSpans, outs.tracePath, left)
	}
	if res.OTLPTarget.URL != "" {
		o := &res.OTLP
		con.Printf("OTLP: %d spans exported to %s over %s (GPU spans, step roots, requests); dropped: %d queue full, %d in failed requests, %d at exit, %d without a host start time; %d spans of unsampled steps left out",
			o.Exported, res.OTLPTarget.URL, res.OTLPTarget.Protocol, o.QueueFull, o.ExportFailed, o.Shutdown, o.Unplaced, o.Unsampled)
		if res.OTLPError != nil {
			con.Printf("OTLP: %d of %d requests failed, the last with: %v", o.ExportErrors, o.Exports, res.OTLPError)
		}
	}
	if outs.spansPath != "" {
		con.Printf("span file: %d spans written to %s (%s trace summary %s)", res.FileSpans, outs.spansPath, cfg.command(), outs.spansPath)
	}
	var b strings.Builder
	_ = summary.Write(&b, summary.FromSnapshot(s))
	con.Printf("\n%s", strings.TrimRight(b.String(), "\n"))
	b.Reset()
	_ = summary.WriteGPUTime(&b, &s.GPUTime)
	if b.Len() > 0 {
		con.Printf("\n%s", strings.TrimRight(b.String(), "\n"))
	}
}

// whoseLine is whose GPU time in a line: each lane's cost model, and each
// class's share of the GPU time split and its requests; "" when no
// request was said.
func whoseLine(a *gpuspans.RequestAttribution) string {
	if len(a.Classes) == 0 {
		return ""
	}
	var models []string
	for _, l := range a.Lanes {
		models = append(models, fmt.Sprintf("%s %s", l.Lane, l.Model.Status))
	}
	var total time.Duration
	gpu := make([]time.Duration, len(a.Classes))
	for i, c := range a.Classes {
		for _, l := range c.Lanes {
			gpu[i] += l.GPUTime
		}
		total += gpu[i]
	}
	var parts []string
	for i, c := range a.Classes {
		if gpu[i] == 0 && c.Finished == 0 {
			continue
		}
		name := c.Tenant
		if c.Other {
			name = "other"
		}
		parts = append(parts, fmt.Sprintf("%s %.1f%% (%v over %d requests)", name, 100*float64(gpu[i])/float64(max(total, 1)), gpu[i].Round(time.Microsecond), c.Finished))
	}
	return fmt.Sprintf("whose GPU time (cost model: %s): %s", strings.Join(models, ", "), strings.Join(parts, ", "))
}
