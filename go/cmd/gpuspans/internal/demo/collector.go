package demo

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// collector reads landed spans off the hub for the trace and the span file,
// and prints the status line, from its own goroutine, as a serving
// binary's exporter would: the engine loop never waits for it, and it
// takes the hub's harvest lock only briefly.
type collector struct {
	hub         *gpuspans.Hub
	eng         *Engine
	outs        *outputs
	con         *console
	statusEvery time.Duration
	quit        chan struct{}
	once        sync.Once

	mu      sync.Mutex // guards last, buf, reqLast and reqs: poll runs on the goroutine, then once more from Run
	last    uint64     // Seq of the last span read
	buf     []gpuspans.Span
	reqLast uint64 // Seq of the last request record read
	reqs    []gpuspans.RequestRecord

	// Status line state, owned by the goroutine.
	snap       gpuspans.Snapshot
	prevT      time.Time
	prevStep   uint64 // engine steps at the previous status
	prevLanded uint64
}

func newCollector(hub *gpuspans.Hub, eng *Engine, outs *outputs, con *console, statusEvery time.Duration) *collector {
	if statusEvery == 0 {
		statusEvery = 5 * time.Second
		if con.tty {
			statusEvery = 500 * time.Millisecond
		}
	}
	if outs.wantSpans() {
		hub.KeepStartTimes() // the first spans the outputs get are placed too
	}
	return &collector{hub: hub, eng: eng, outs: outs, con: con, statusEvery: statusEvery, quit: make(chan struct{}), prevT: time.Now()}
}

// run polls and prints until stop. ctx only ends the status line early.
func (c *collector) run(ctx context.Context) {
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	var status <-chan time.Time
	if c.statusEvery > 0 {
		t := time.NewTicker(c.statusEvery)
		defer t.Stop()
		status = t.C
	}
	for {
		select {
		case <-c.quit:
			return
		case <-poll.C:
			c.poll()
		case <-status:
			if ctx.Err() == nil {
				c.status()
			}
		}
	}
}

func (c *collector) stop() { c.once.Do(func() { close(c.quit) }) }

// poll hands the spans landed since the last poll to the outputs.
func (c *collector) poll() {
	if !c.outs.wantSpans() {
		return // reading would keep the hub placing spans nobody uses
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = c.hub.RecentSpans(c.last, c.buf[:0])
	if len(c.buf) > 0 {
		c.last = c.buf[len(c.buf)-1].Seq
		c.outs.add(c.buf)
	}
	if c.outs.spans != nil {
		c.reqs = c.hub.FinishedRequests(c.reqLast, c.reqs[:0])
		if len(c.reqs) > 0 {
			c.reqLast = c.reqs[len(c.reqs)-1].Seq
			c.outs.addRequests(c.reqs)
		}
	}
}

// status prints one status line with rates since the previous one.
func (c *collector) status() {
	c.hub.SnapshotInto(&c.snap)
	s := &c.snap
	now := time.Now()
	dt := now.Sub(c.prevT).Seconds()
	if dt <= 0 {
		dt = 1
	}
	k := &s.Counters
	steps := c.eng.Steps()
	c.con.Status(statusLine(s, steps, float64(steps-c.prevStep)/dt, float64(k.Landed-c.prevLanded)/dt))
	c.prevT, c.prevStep, c.prevLanded = now, steps, k.Landed
}

// statusLine is the live status: the engine's progress (its own step
// count: the hub counts none at level off), rates, the counters that say
// whether telemetry keeps up, and the settings in force.
func statusLine(s *gpuspans.Snapshot, steps uint64, stepsPerSec, landedPerSec float64) string {
	k := &s.Counters
	return fmt.Sprintf("step %d (%.1f/s) | spans landed %d (+%.0f/s), dropped %d, errored %d, in flight %d | level %s, kernel spans 1 in %d",
		steps, stepsPerSec, k.Landed, landedPerSec, k.DroppedTotal(), k.Errored, k.InFlight, s.Level, s.KernelSpanEvery)
}
