package demo

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"
)

// runSteps says how the run stops and where its files go, then runs the
// engine loop with the collector beside it until ctx is done or a limit
// is hit. It returns the loop's error: a GPU failure.
func (r *demoRun) runSteps(ctx context.Context) (err error) {
	r.con.Printf("%s; %s", stopHow(&r.cfg), r.outs.describe())

	col := newCollector(r.hub, r.eng, r.outs, r.con, r.cfg.StatusEvery)
	r.col = col
	colDone := make(chan struct{})
	go func() { col.run(ctx); close(colDone) }()

	start := time.Now()
	r.res.Steps, r.res.StoppedWhy, err = loop(ctx, r.eng, &r.cfg)
	r.res.Elapsed = time.Since(start)
	col.stop()
	<-colDone
	r.con.EndStatus()
	return err
}

// loop runs engine steps at cfg.Rate until ctx is done or a limit is hit,
// on one OS thread: it launches the kernels, and kernel windows attach and
// detach CUPTI on the launching thread only.
func loop(ctx context.Context, eng *Engine, cfg *Config) (int, string, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var period time.Duration
	if cfg.Rate > 0 {
		period = time.Duration(float64(time.Second) / cfg.Rate)
	}
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		deadline = t.C
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	next := time.Now()
	for steps := 0; ; {
		select {
		case <-ctx.Done():
			return steps, "interrupted", nil
		case <-deadline:
			return steps, "--duration", nil
		default:
		}
		if cfg.Steps > 0 && steps >= cfg.Steps {
			return steps, "--steps", nil
		}
		if err := eng.Step(); err != nil {
			return steps, err.Error(), err
		}
		steps++
		if period == 0 {
			continue
		}
		next = next.Add(period)
		wait := time.Until(next)
		if wait <= 0 {
			if wait < -period {
				next = time.Now() // behind by more than a step: do not try to catch up in a burst
			}
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return steps, "interrupted", nil
		case <-deadline:
			return steps, "--duration", nil
		case <-timer.C:
		}
	}
}

func stopHow(cfg *Config) string {
	var limits []string
	if cfg.Steps > 0 {
		limits = append(limits, fmt.Sprintf("after %d steps", cfg.Steps))
	}
	if cfg.Duration > 0 {
		limits = append(limits, "after "+cfg.Duration.String())
	}
	if len(limits) == 0 {
		return "running until Ctrl-C"
	}
	return "stopping " + strings.Join(limits, " or ") + " (or Ctrl-C)"
}
