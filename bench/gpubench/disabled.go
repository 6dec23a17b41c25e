package main

import (
	"time"

	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// --- disabled ---------------------------------------------------------------
//
// A serving loop at LevelOff and LevelStep against no telemetry calls, and
// the calls alone in a tight loop: what the levels below Kernel cost.

type disabledResult struct {
	Loop         string             `json:"loop"`
	Steps        int                `json:"steps"`
	Repeats      int                `json:"repeats"`
	KernelsStep  int                `json:"kernels_per_step"`
	Variants     map[string]variant `json:"variants"` // none, off, step
	OffMinusNone float64            `json:"off_minus_none_ns_per_step"`
	StepMinus    float64            `json:"step_minus_none_ns_per_step"`
	NoiseNs      float64            `json:"noise_ns_per_step"` // max - min of the no-telemetry repeats
	OffInNoise   bool               `json:"off_within_noise"`
	StepInNoise  bool               `json:"step_within_noise"`
	PoolsOpened  bool               `json:"pools_opened"` // must stay false below Kernel
	Begun        uint64             `json:"begun"`        // must stay 0
	// Per call, in a tight loop without launches (best of 3).
	MicroNs map[string]float64 `json:"micro_ns"`
}

func runDisabled(e *env) (interface{}, string, error) {
	_, r, release, err := e.openRig(1)
	if err != nil {
		return nil, "", err
	}
	defer release()
	h, err := gpuspans.New(gpuspans.Options{Lanes: []string{"decode"}, Level: gpuspans.LevelOff, KernelSpanEvery: 1, Logf: logf})
	if err != nil {
		return nil, "", err
	}
	if err := h.Install(0, r.lane, cuda.Opener(0)); err != nil {
		return nil, "", err
	}
	const kernels = 8
	steps, repeats := e.scale(2000, 20), e.scale(5, 3)
	k := r.streams[0]
	none := func() { r.launches(k, kernels) }
	served := func() { r.servedStep(h, k, kernels) }
	res := &disabledResult{
		Loop:  "per step: BeginStep, LaneBegin, 8 x (KernelBegin, empty kernel, KernelEnd), LaneEnd; stream synced after each step, untimed",
		Steps: steps, Repeats: repeats, KernelsStep: kernels, Variants: map[string]variant{},
	}
	runs := []struct {
		name  string
		level gpuspans.Level
		f     func()
	}{{"none", gpuspans.LevelOff, none}, {"off", gpuspans.LevelOff, served}, {"step", gpuspans.LevelStep, served}}
	reps := map[string][]stepTime{}
	for _, v := range runs { // warm up
		_ = h.SetLevel(v.level)
		if _, err := r.timeSteps(steps/10+1, v.f); err != nil {
			return nil, "", err
		}
	}
	for rep := 0; rep < repeats; rep++ {
		for _, v := range runs {
			_ = h.SetLevel(v.level)
			t, err := r.timeSteps(steps, v.f)
			if err != nil {
				return nil, "", err
			}
			reps[v.name] = append(reps[v.name], t)
		}
	}
	for name, x := range reps {
		res.Variants[name] = newVariant(x)
	}
	none0 := res.Variants["none"]
	res.NoiseNs = maxOf(none0.StepNsReps) - minOf(none0.StepNsReps)
	res.OffMinusNone = res.Variants["off"].StepNsMedian - none0.StepNsMedian
	res.StepMinus = res.Variants["step"].StepNsMedian - none0.StepNsMedian
	res.OffInNoise = absF(res.OffMinusNone) <= res.NoiseNs
	res.StepInNoise = absF(res.StepMinus) <= res.NoiseNs

	// The calls alone: what the loop above pays per call below Kernel.
	iters := e.scale(5000000, 10000)
	best := func(f func(n int)) float64 {
		b := 0.0
		for i := 0; i < 3; i++ {
			t0 := time.Now()
			f(iters)
			if t := ns(time.Since(t0)) / float64(iters); i == 0 || t < b {
				b = t
			}
		}
		return b
	}
	var sink uint64
	res.MicroNs = map[string]float64{}
	res.MicroNs["empty_loop"] = best(func(n int) {
		for i := 0; i < n; i++ {
			sink += uint64(i)
		}
	})
	for _, lv := range []gpuspans.Level{gpuspans.LevelOff, gpuspans.LevelStep} {
		_ = h.SetLevel(lv)
		res.MicroNs["span_calls_"+lv.String()] = best(func(n int) {
			for i := 0; i < n; i++ {
				h.LaneBegin(0)
				sp := h.KernelBegin(kEmpty, k)
				h.KernelEnd(sp)
				h.LaneEnd(0)
			}
		})
		res.MicroNs["begin_step_"+lv.String()] = best(func(n int) {
			for i := 0; i < n; i++ {
				h.BeginStep()
			}
		})
	}
	_ = sink
	s := h.Snapshot()
	res.Begun = s.Counters.Begun
	for _, d := range s.Devices {
		if d.State != gpuspans.DevicePending {
			res.PoolsOpened = true
		}
	}
	return res, "", nil
}
