package gpuspans

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Per-launch averages, by which GPU time names the kernels that moved
// (GPUTime.Moved): each lane keeps, per launch it has run, its time per
// lane span averaged with two half-lives. They are bounded: a launch not
// run for GPUTimeLaunchForget is forgotten, and a lane keeps at most
// GPUTimeLaunchesPerLane of them, the heaviest, so that an engine whose
// launches change from step to step (eager prefill of varying shapes)
// keeps neither more memory nor more work per window over time.

// launchKey is a kernel launch's place in a lane span: its name and how
// many of that name came before it, plus one.
type launchKey struct {
	name, n int32
}

// moveStat is one launch's averages, ns per lane span.
type moveStat struct {
	recent, base float64
	seenNs       int64 // Unix ns of the latest window it ran in
}

// launchAverages are one lane's per-launch averages.
type launchAverages struct {
	m     map[launchKey]*moveStat
	free  []*moveStat    // forgotten, for new launches to reuse
	evict []launchWeight // scratch
}

type launchWeight struct {
	w float64
	k launchKey
}

// update averages in one window's launches (each launch's time inside the
// lane's spans, summed over spans spans) at now (Unix ns), dt after the
// lane's previous window; a launch absent from the window ran 0 in it. The
// lane's first window sets the baseline.
func (a *launchAverages) update(ls map[launchKey]int64, spans int64, now int64, dt float64, first bool) {
	if a.m == nil {
		a.m = make(map[launchKey]*moveStat, len(ls))
	}
	per := float64(max(spans, 1))
	for lk, ns := range ls {
		m := a.m[lk]
		if m == nil {
			m = a.fresh()
			if first {
				m.recent, m.base = float64(ns)/per, float64(ns)/per
			}
			a.m[lk] = m
		}
		m.seenNs = now
	}
	if !first {
		wr := 1 - math.Exp2(-dt/float64(GPUTimeRecentHalfLife))
		wb := 1 - math.Exp2(-dt/float64(GPUTimeBaselineHalfLife))
		for lk, m := range a.m {
			if now-m.seenNs >= int64(GPUTimeLaunchForget) {
				a.forget(lk, m)
				continue
			}
			v := 0.0
			if m.seenNs == now {
				v = float64(ls[lk]) / per
			}
			m.recent += wr * (v - m.recent)
			m.base += wb * (v - m.base)
		}
	}
	a.bound()
}

// fresh returns a zeroed moveStat, a forgotten one if there is.
func (a *launchAverages) fresh() *moveStat {
	if n := len(a.free); n > 0 {
		m := a.free[n-1]
		a.free = a.free[:n-1]
		*m = moveStat{}
		return m
	}
	return &moveStat{}
}

// forget drops launch lk, keeping its moveStat for a new one.
func (a *launchAverages) forget(lk launchKey, m *moveStat) {
	delete(a.m, lk)
	if len(a.free) < GPUTimeLaunchesPerLane {
		a.free = append(a.free, m)
	}
}

// bound forgets the lightest launches past GPUTimeLaunchesPerLane: those
// with the least time per span, now or at the baseline.
func (a *launchAverages) bound() {
	n := len(a.m) - GPUTimeLaunchesPerLane
	if n <= 0 {
		return
	}
	e := a.evict[:0]
	for lk, m := range a.m {
		e = append(e, launchWeight{max(m.recent, m.base), lk})
	}
	selectLightest(e, n)
	for _, x := range e[:n] {
		a.forget(x.k, a.m[x.k])
	}
	a.evict = e[:0]
}

// lighter orders launches by weight, then key: a total order, so that the
// launches forgotten do not depend on the map's order.
func lighter(a, b launchWeight) bool {
	if a.w != b.w {
		return a.w < b.w
	}
	if a.k.name != b.k.name {
		return a.k.name > b.k.name
	}
	return a.k.n > b.k.n
}

// selectLightest reorders e so that e[:n] are its n lightest (quickselect:
// linear on average, where a sort would be n log n a window).
func selectLightest(e []launchWeight, n int) {
	lo, hi := 0, len(e)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		e[mid], e[hi] = e[hi], e[mid]
		p := lo
		for i := lo; i < hi; i++ {
			if lighter(e[i], e[hi]) {
				e[i], e[p] = e[p], e[i]
				p++
			}
		}
		e[p], e[hi] = e[hi], e[p]
		switch {
		case p == n:
			return
		case p < n:
			lo = p + 1
		default:
			hi = p - 1
		}
	}
}

// moved lists the launches that grew most against their baseline, most
// first. Caller holds the harvest lock.
func (h *Hub) moved() {
	g := &h.gt
	g.out.Moved = g.out.Moved[:0]
	for _, key := range g.laneKeys {
		for lk, m := range g.lanes[key].moves.m {
			grew := m.recent - m.base
			if grew < float64(GPUTimeMovedMin) || grew < GPUTimeMovedRatio*m.base {
				continue
			}
			g.out.Moved = append(g.out.Moved, KernelMove{Device: int(key[0]), Lane: h.lanes[key[1]], Kernel: h.kernelNames[lk.name], Launch: int(lk.n),
				Recent: time.Duration(m.recent), Baseline: time.Duration(m.base)})
		}
	}
	slices.SortFunc(g.out.Moved, func(a, b KernelMove) int {
		if c := cmp.Compare(b.Recent-b.Baseline, a.Recent-a.Baseline); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Kernel, b.Kernel); c != 0 {
			return c
		}
		return cmp.Compare(a.Launch, b.Launch)
	})
	if len(g.out.Moved) > GPUTimeMovedMax {
		g.out.Moved = g.out.Moved[:GPUTimeMovedMax]
	}
}
