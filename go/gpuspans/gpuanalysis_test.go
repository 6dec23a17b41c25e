package gpuspans

import (
	"cmp"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

// The analysis against a count of every nanosecond: random windows of small
// integer times (overlapping streams, nested lanes and lanes that share a
// boundary, kernels of no duration, graphs whose kernels share a launch,
// copies, launch calls that return after the device ran dry and ones long
// before, launches with no record, kernels outside every lane), each lane
// span's nanoseconds classified one by one by the rules of docs/design.md
// (idle by cause), and every per-lane number compared exactly.
// tools/ci/gpuanalysis_mutations.sh checks that named mistakes fail it.
func TestGPUAnalysisAgainstEveryNanosecond(t *testing.T) {
	seeds := 3000
	if testing.Short() {
		seeds = 300
	}
	var a gpuAnalysis
	names := []string{OtherKernel, "k1", "k2", "k3", "k4"}
	laneNames := []string{"l0", "l1", "l2"}
	var causes [5]int64 // of every seed, so that a rule that never fires fails the test
	var callHost int64
	for seed := int64(1); seed <= int64(seeds); seed++ {
		lanes, recs := randomWindow(rand.New(rand.NewSource(seed)))
		want := bruteForce(lanes, recs)
		in := slices.Clone(lanes)
		a.run(in, recs, names, laneNames)
		got := map[[2]int32]*laneWindow{}
		for i := range a.lanes {
			got[a.lanes[i].key] = &a.lanes[i]
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d: %d lanes measured, the brute-force count of every ns has %d (differs from the brute-force count)", seed, len(got), len(want))
		}
		for key, w := range want {
			g := got[key]
			if g == nil {
				t.Fatalf("seed %d: device %d lane %d not measured (differs from the brute-force count)", seed, key[0], key[1])
			}
			check := func(what string, got, want int64) {
				t.Helper()
				if got != want {
					t.Fatalf("seed %d: device %d lane %d: %s %d ns, the brute-force count of every ns says %d (differs from the brute-force count)",
						seed, key[0], key[1], what, got, want)
				}
			}
			check("spans", g.spans, w.spans)
			check("time", g.time, w.time)
			check("busy", g.busy, w.busy)
			check("idle", g.idle, w.idle)
			check("gaps", g.gaps, w.gaps)
			check("host", int64(g.causes.Host), int64(w.causes.Host))
			check("launch", int64(g.causes.Launch), int64(w.causes.Launch))
			check("copy", int64(g.causes.Copy), int64(w.causes.Copy))
			check("wait", int64(g.causes.Wait), int64(w.causes.Wait))
			check("other", int64(g.causes.Other), int64(w.causes.Other))
			check("host at the span's start and inside launch calls", g.callHost, w.callHost)
			c := g.causes
			check("idle by cause, summed", int64(c.Host+c.Launch+c.Copy+c.Wait+c.Other), g.idle)
			for name, ns := range w.shares {
				check("kernel "+names[name], g.shares[name], ns)
			}
			check("kernels", int64(len(g.shares)), int64(len(w.shares)))
			for lk, ns := range w.launches {
				check(fmt.Sprintf("launch %d of %s", lk.n, names[lk.name]), g.launches[lk], ns)
			}
			check("launches", int64(len(g.launches)), int64(len(w.launches)))
			for i, v := range []time.Duration{c.Host, c.Launch, c.Copy, c.Wait, c.Other} {
				causes[i] += int64(v)
			}
			callHost += g.callHost
		}
		// Each lane span as the lanes sum it.
		for i := range in {
			if in[i].start == 0 != !a.spans[i].placed {
				t.Fatalf("seed %d: span %+v placed %v", seed, in[i], a.spans[i].placed)
			}
		}
	}
	for i, c := range causes {
		if c == 0 {
			t.Errorf("cause %d never seen in %d windows: the windows do not exercise it", i, seeds)
		}
	}
	if callHost == 0 || callHost == causes[0] {
		t.Errorf("host at spans' starts and inside launch calls %d ns of the host's %d: the windows do not exercise both sides of a call's start", callHost, causes[0])
	}
}

// randomWindow makes a window of one or two devices: lane spans and records
// at times 1000..3000 ns (a lane span at 0 is not placed).
func randomWindow(r *rand.Rand) ([]winLane, []winKernel) {
	var lanes []winLane
	var recs []winKernel
	corr := uint32(1)
	for dev := int32(0); dev < int32(1+r.Intn(2)); dev++ {
		streams := 1 + r.Intn(3)
		for st := 0; st < streams; st++ {
			at := int64(1000 + r.Intn(200))
			for k := r.Intn(10); k > 0; k-- {
				at += int64(r.Intn(80))
				// A graph: kernels that share a launch call.
				n := 1
				if r.Intn(4) == 0 {
					n = 2 + r.Intn(3)
				}
				c := corr
				corr++
				if r.Intn(10) == 0 {
					c = 0 // not correlated
				}
				first := at
				for ; n > 0; n-- {
					d := int64(r.Intn(60))
					if r.Intn(10) == 0 {
						d = 0
					}
					recs = append(recs, winKernel{start: at, end: at + d, dev: dev, name: int32(r.Intn(5)), stream: uint32(1 + st),
						corr: c, step: uint64(1 + r.Intn(2)), kind: backend.RecordKernel})
					at += d + int64(r.Intn(3))
				}
				if c != 0 && r.Intn(8) != 0 {
					// The call returns after its first kernel's start (the
					// device waited for the host) or well before (queued).
					end := first - int64(r.Intn(200)) + int64(r.Intn(60))
					recs = append(recs, winKernel{start: end - int64(r.Intn(20)), end: end, corr: c, kind: backend.RecordLaunch})
					if r.Intn(10) == 0 {
						recs = append(recs, winKernel{start: end - 5, end: end + int64(r.Intn(40)), corr: c, kind: backend.RecordLaunch})
					}
				}
			}
		}
		for k := r.Intn(4); k > 0; k-- {
			s := int64(1000 + r.Intn(900))
			kind := backend.RecordMemcpy
			if r.Intn(2) == 0 {
				kind = backend.RecordMemset
			}
			recs = append(recs, winKernel{start: s, end: s + int64(r.Intn(150)), dev: dev, stream: uint32(1 + r.Intn(streams)), kind: kind})
		}
		prevEnd := int64(0)
		for k := 1 + r.Intn(6); k > 0; k-- {
			var s int64
			switch r.Intn(4) {
			case 0:
				s = prevEnd // shares the previous span's boundary
			default:
				s = int64(1000 + r.Intn(900))
			}
			if s == 0 {
				s = 1000
			}
			dur := int64(r.Intn(400))
			if r.Intn(12) == 0 {
				dur = 0
			}
			ln := winLane{dev: dev, lane: int32(r.Intn(3)), step: uint64(1 + r.Intn(2)), start: s, dur: dur}
			if r.Intn(15) == 0 {
				ln.start = 0
			}
			lanes = append(lanes, ln)
			prevEnd = s + dur
			if r.Intn(3) == 0 { // a lane nested in it
				in := s + int64(r.Intn(int(dur)+1))
				lanes = append(lanes, winLane{dev: dev, lane: int32(r.Intn(3)), step: ln.step, start: in, dur: int64(r.Intn(int(s+dur-in) + 1))})
			}
		}
	}
	r.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	r.Shuffle(len(lanes), func(i, j int) { lanes[i], lanes[j] = lanes[j], lanes[i] })
	return lanes, recs
}

// bruteForce classifies every nanosecond of every placed lane span on its
// own, by the rules as docs/design.md states them.
func bruteForce(lanes []winLane, recs []winKernel) map[[2]int32]*laneWindow {
	out := map[[2]int32]*laneWindow{}
	for _, ln := range lanes {
		if ln.start == 0 {
			continue
		}
		key := [2]int32{ln.dev, ln.lane}
		lw := out[key]
		if lw == nil {
			lw = &laneWindow{key: key, shares: map[int32]int64{}, launches: map[launchKey]int64{}}
			out[key] = lw
		}
		var ks, copies, calls []winKernel
		for _, r := range recs {
			switch {
			case r.kind == backend.RecordLaunch:
				calls = append(calls, r)
			case r.dev != ln.dev:
			case r.kind == backend.RecordKernel:
				ks = append(ks, r)
			default:
				copies = append(copies, r)
			}
		}
		slices.SortFunc(ks, func(x, y winKernel) int { return kernelOrder(&x, &y) })
		s, e := ln.start, ln.start+ln.dur
		busyAt := func(t int64) bool {
			for _, k := range ks {
				if k.start <= t && t < k.end {
					return true
				}
			}
			return false
		}
		lw.spans++
		lw.time += e - s
		busy := make([]bool, e-s)
		lastBusy := int64(-1) // the span's last busy ns
		for t := s; t < e; t++ {
			if busy[t-s] = busyAt(t); busy[t-s] {
				lastBusy = t
			}
		}
		before := false // a busy ns in [s, t)
		for t := s; t < e; t++ {
			if busy[t-s] {
				lw.busy++
				before = true
				continue
			}
			lw.idle++
			if before && lastBusy > t {
				lw.gaps++
			}
			copying := false
			for _, c := range copies {
				copying = copying || c.start <= t && t < c.end
			}
			if copying {
				lw.causes.Copy++
				continue
			}
			c, callHost := bruteCause(ks, calls, s, e, t)
			lw.causes.Add(c)
			if callHost {
				lw.callHost++
			}
		}
		nth := map[int32]int32{}
		for _, k := range ks {
			if d := min(k.end, e) - max(k.start, s); d > 0 {
				lw.shares[k.name] += d
				nth[k.name]++
				lw.launches[launchKey{k.name, nth[k.name]}] += d
			}
		}
	}
	return out
}

// bruteCause is the cause of idle nanosecond t of span [s, e), with no
// copy running: ks are the device's kernels in kernelOrder, calls every
// launch call; and for the host's, whether a window's cost can lie there:
// at the span's start, or inside the launch call (from its records' first
// start to their first end).
func bruteCause(ks, calls []winKernel, s, e, t int64) (IdleCauses, bool) {
	var n, prev *winKernel
	for i := range ks {
		k := &ks[i]
		if k.end <= k.start {
			continue
		}
		if k.start > t && (n == nil || k.start < n.start) {
			n = k // the next kernel: the first in order to start after t
		}
		if k.end <= t && (prev == nil || k.end > prev.end) {
			prev = k // the work that ended last: the first in order to end then
		}
	}
	if n == nil || n.start >= e {
		return IdleCauses{Other: 1}, false
	}
	var call *winKernel
	var callStart int64
	for i := range calls {
		if c := &calls[i]; n.corr != 0 && c.corr == n.corr {
			if call == nil || c.end < call.end {
				call = c
			}
			if callStart == 0 || c.start < callStart {
				callStart = c.start
			}
		}
	}
	if call == nil {
		return IdleCauses{Other: 1}, false
	}
	a := s // where this idle stretch began inside the span
	if prev != nil {
		a = max(s, prev.end)
	}
	switch {
	case t < call.end:
		return IdleCauses{Host: 1}, a == s || t >= callStart
	case call.end > a && a > s: // the device ran dry inside the span
		return IdleCauses{Host: 1}, false
	case call.end > a:
		return IdleCauses{Launch: 1}, false
	case prev == nil:
		return IdleCauses{Other: 1}, false
	case prev.stream == n.stream:
		return IdleCauses{Launch: 1}, false
	}
	return IdleCauses{Wait: 1}, false
}

// BenchmarkGPUAnalysis analyses a window of 65,536 kernels (the most a
// window keeps) on 4 streams with a launch call each, delivered as they
// complete as CUPTI does, in 4,096 lane spans of 2 lanes, one nested in the
// other: the cost per window on the harvesting thread.
func BenchmarkGPUAnalysis(b *testing.B) {
	const kernels, spans = 1 << 16, 4096
	names := make([]string, 64)
	for i := range names {
		names[i] = fmt.Sprintf("k%d", i)
	}
	r := rand.New(rand.NewSource(1))
	var recs []winKernel
	at := int64(1_000_000)
	for i := 0; i < kernels; i++ {
		at += int64(r.Intn(2000))
		d := int64(500 + r.Intn(5000))
		c := uint32(i + 1)
		recs = append(recs, winKernel{start: at, end: at + d, name: int32(i % 61), stream: uint32(i % 4), corr: c, step: uint64(1 + i/4096)},
			winKernel{start: at - 3000, end: at - 1000 + int64(r.Intn(3000)), corr: c, kind: backend.RecordLaunch})
	}
	slices.SortStableFunc(recs, func(x, y winKernel) int { return cmp.Compare(x.end, y.end) })
	per := (at - 1_000_000) / spans
	var lanes []winLane
	for i := int64(0); i < spans/2; i++ {
		s := 1_000_000 + 2*i*per
		lanes = append(lanes, winLane{lane: 0, step: uint64(1 + i/128), start: s, dur: 2 * per},
			winLane{lane: 1, step: uint64(1 + i/128), start: s + per/4, dur: per})
	}
	in := make([]winLane, len(lanes))
	var a gpuAnalysis
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(in, lanes)
		a.run(in, recs, names, []string{"outer", "inner"})
	}
}

// Without a background harvester the analysis runs in BeginStep's harvest:
// one window a harvest, the rest at the next ones; a background harvester
// analyses every window ready.
func TestAnalysisBoundedOnTheSteppingThread(t *testing.T) {
	h := newHub(t, Options{Lanes: []string{"a"}})
	h.mu.Lock()
	defer h.mu.Unlock()
	ready := func(seqs ...uint64) {
		for _, seq := range seqs {
			w := h.gt.window(seq)
			w.lanes = append(w.lanes, winLane{lane: 0, step: seq, start: 1_000_000, dur: 10})
			w.finished = true
		}
	}
	ready(1, 2, 3)
	for want := uint64(1); want <= 3; want++ {
		h.analyseWindows()
		if h.gt.totals.Windows != want {
			t.Fatalf("after harvest %d: %d windows analysed, want %d", want, h.gt.totals.Windows, want)
		}
	}
	h.background.Store(true)
	defer h.background.Store(false)
	ready(4, 5, 6)
	h.analyseWindows()
	if h.gt.totals.Windows != 6 || len(h.gt.open) != 0 {
		t.Errorf("background harvest: %d windows analysed, %d open, want 6 and none", h.gt.totals.Windows, len(h.gt.open))
	}
}

// sortOnce sorts records nearly in order by insertion and others in full.
func TestSortOnce(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	byStart := func(x, y *winKernel) int { return cmp.Compare(x.start, y.start) }
	for trial := 0; trial < 100; trial++ {
		s := make([]winKernel, r.Intn(2000))
		for i := range s {
			s[i] = winKernel{start: int64(i), corr: uint32(i)}
		}
		switch trial % 3 {
		case 0: // a few out of place, by a few
			for k := 0; k < len(s)/50; k++ {
				i := r.Intn(len(s))
				j := min(len(s)-1, i+r.Intn(5))
				s[i], s[j] = s[j], s[i]
			}
		case 1: // shuffled: past the insertion's budget
			r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		}
		sortOnce(s, byStart)
		for i := range s {
			if s[i].start != int64(i) || s[i].corr != uint32(i) {
				t.Fatalf("trial %d: record %d is %+v after sortOnce", trial, i, s[i])
			}
		}
	}
}
