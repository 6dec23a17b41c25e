package profile

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/gpuspans/gpuspans/go/internal/textsafe"
)

// WindowLane is one kernel window's measurement of one lane on one device,
// per lane span.
type WindowLane struct {
	Model, Driver, Lane string
	Spans               int64
	// Served is the lane's time per span outside windows around the window
	// (0: the window is unsettled, and Idle is zero too).
	Served float64
	Busy   float64
	Idle   Causes
	// Kernels are the window's kernel names in the lane.
	Kernels []WindowKernel
}

// WindowKernel is one kernel name in a window: its time per span, and its
// launches in a span (the hub gives the most of the window's spans).
// PerLaunch is the time per span of its n-th launch in a span at n-1,
// for a name launched more than once (nil for one launched once).
type WindowKernel struct {
	Name           string
	Time, Launches float64
	PerLaunch      []float64
}

// Builder gathers a build's profile window by window. A lane keeps the
// averages of at most keptKernels names in memory (the heaviest), so that a
// lane whose kernels change from step to step keeps bounded memory. Not
// safe for concurrent use.
type Builder struct {
	lanes []*laneAcc
}

const keptKernels = 4 * MaxKernels

type laneAcc struct {
	lane        Lane // Kernels unused
	idle        Causes
	idleWindows uint64
	kernels     map[string]*kernelAcc
	cutBelow    float64
	scratch     []*kernelAcc
	perLaunch   int // the kernels' per-launch entries, at most keptLaunches
}

// keptLaunches bounds a lane's per-launch averages in memory: a name keeps
// its first MaxLaunches, and a heavier name takes a lighter one's place
// when the lane is at the bound (admit).
const keptLaunches = 4 * MaxLaneLaunches

type kernelAcc struct {
	name     string
	time     Stat
	launches float64 // summed over the windows that ran it
	runs     uint64
	seen     uint64  // the lane's window count when it last ran
	cur      float64 // its time in the window being added
	// Launch by launch, for a name launched more than once (holder): its
	// averages since the lane's window perFrom, and this window's times.
	holder  bool
	perFrom uint64
	per     []Stat
	curPer  []float64
}

// admit makes k, of time ns in window n, hold its launches apart (need of
// them) if the lane's keptLaunches allow, taking them from the lightest
// holders lighter than k as needed. A name that ran before it held them
// has no launch averages for those windows: its averages start at n.
func (l *laneAcc) admit(k *kernelAcc, need int, ns float64, n uint64) bool {
	for l.perLaunch+need > keptLaunches {
		var light *kernelAcc
		for _, o := range l.kernels {
			if o.holder && o != k && (light == nil || heavier(o, light) > 0) {
				light = o
			}
		}
		if light == nil || light.time.Mean >= max(k.time.Mean, ns) {
			return false
		}
		l.perLaunch -= len(light.curPer)
		light.holder, light.per, light.curPer = false, nil, nil
	}
	k.holder, k.perFrom = true, n-1
	return true
}

// Add adds one window's lane. A window with a value that is not a finite
// time (NaN, Inf, past MaxValue) is left out whole; a negative value (a
// difference that rounding took below 0) counts as 0. A kernel name listed
// twice in a window counts once, with the two's time and launches summed.
func (b *Builder) Add(w *WindowLane) {
	if w.Spans <= 0 || !w.valid() {
		return
	}
	l := b.lane(w.Model, w.Driver, w.Lane)
	l.lane.Windows++
	l.lane.Spans += uint64(w.Spans)
	l.lane.Busy.Add(max(w.Busy, 0))
	if w.Served > 0 {
		l.lane.Time.Add(w.Served)
		l.idle.Host += max(w.Idle.Host, 0)
		l.idle.Launch += max(w.Idle.Launch, 0)
		l.idle.Copy += max(w.Idle.Copy, 0)
		l.idle.Wait += max(w.Idle.Wait, 0)
		l.idle.Other += max(w.Idle.Other, 0)
		l.idleWindows++
	}
	if l.kernels == nil {
		l.kernels = make(map[string]*kernelAcc)
	}
	n := l.lane.Windows
	for i := range w.Kernels {
		wk := &w.Kernels[i]
		k := l.kernels[wk.Name]
		if k == nil {
			// The windows before this one ran it 0 per span.
			k = &kernelAcc{name: wk.Name, time: Stat{N: n - 1}}
			l.kernels[wk.Name] = k
		}
		if k.seen != n {
			k.seen, k.cur = n, 0
			k.runs++
			clear(k.curPer)
		}
		k.cur += max(wk.Time, 0)
		k.launches += max(wk.Launches, 0)
		if len(wk.PerLaunch) > 1 && (k.holder || l.admit(k, min(len(wk.PerLaunch), MaxLaunches), wk.Time, n)) {
			m := min(len(wk.PerLaunch), MaxLaunches, len(k.curPer)+keptLaunches-l.perLaunch)
			for len(k.curPer) < m {
				k.curPer = append(k.curPer, 0)
				l.perLaunch++
			}
			for i := range m {
				k.curPer[i] += max(wk.PerLaunch[i], 0)
			}
		}
	}
	for _, k := range l.kernels { // each has a value for every window before this one
		for len(k.per) < len(k.curPer) {
			k.per = append(k.per, Stat{N: n - 1 - k.perFrom}) // 0 in the windows since it held launches
		}
		if k.seen == n {
			k.time.Add(k.cur)
			for i := range k.per {
				k.per[i].Add(k.curPer[i])
			}
		} else { // not run in this window
			k.time.Add(0)
			for i := range k.per {
				k.per[i].Add(0)
			}
		}
	}
	if len(l.kernels) > keptKernels {
		// Down to a fifth below the bound, so that a lane whose names
		// change every window sorts its list once in many windows, not
		// in each.
		l.cutBelow = max(l.cutBelow, cutLightest(l, keptKernels-keptKernels/5))
	}
}

// valid reports whether w's values are times Add can take.
func (w *WindowLane) valid() bool {
	ok := func(x float64) bool { return !math.IsNaN(x) && x <= MaxValue && x >= -MaxValue }
	if !ok(w.Served) || !ok(w.Busy) || !ok(w.Idle.Host) || !ok(w.Idle.Launch) || !ok(w.Idle.Copy) || !ok(w.Idle.Wait) || !ok(w.Idle.Other) {
		return false
	}
	for i := range w.Kernels {
		if !ok(w.Kernels[i].Time) || !ok(w.Kernels[i].Launches) {
			return false
		}
		for _, x := range w.Kernels[i].PerLaunch {
			if !ok(x) {
				return false
			}
		}
	}
	return true
}

// lane returns the accumulator of a lane on a device model and driver,
// made on first use.
func (b *Builder) lane(model, driver, lane string) *laneAcc {
	for _, l := range b.lanes {
		if l.lane.Model == model && l.lane.Driver == driver && l.lane.Lane == lane {
			return l
		}
	}
	l := &laneAcc{lane: Lane{Model: model, Driver: driver, Lane: lane}}
	b.lanes = append(b.lanes, l)
	return l
}

// Windows is how many windows measured a lane on a device model.
func (b *Builder) Windows(model, lane string) uint64 {
	var n uint64
	for _, l := range b.lanes {
		if l.lane.Model == model && l.lane.Lane == lane {
			n += l.lane.Windows
		}
	}
	return n
}

// MinWindows is the fewest windows of any lane; 0 without lanes.
func (b *Builder) MinWindows() uint64 {
	var n uint64
	for i, l := range b.lanes {
		if i == 0 || l.lane.Windows < n {
			n = l.lane.Windows
		}
	}
	return n
}

// cutLightest drops all but keep of l's kernels, the heaviest kept, and
// returns the heaviest mean dropped. The kept ones move to a new map: a
// map keeps the room of the most entries it ever held, and one window of
// many names must not leave that behind.
func cutLightest(l *laneAcc, keep int) float64 {
	s := l.scratch[:0]
	for _, k := range l.kernels {
		s = append(s, k)
	}
	slices.SortFunc(s, heavier)
	cut := 0.0
	for _, k := range s[keep:] {
		cut = max(cut, k.time.Mean)
	}
	l.kernels = make(map[string]*kernelAcc, keep+keep/4)
	for _, k := range s[:keep] {
		l.kernels[k.name] = k
	}
	for _, k := range s[keep:] {
		l.perLaunch -= len(k.curPer)
	}
	clear(s)
	if cap(s) > 2*keptKernels {
		s = nil
	}
	l.scratch = s[:0]
	return cut
}

// heavier orders kernels by mean time, most first, then by name.
func heavier(a, b *kernelAcc) int {
	if c := cmp.Compare(b.time.Mean, a.time.Mean); c != 0 {
		return c
	}
	return cmp.Compare(a.name, b.name)
}

// Profile returns the profile gathered so far, of build, written by host
// at now: its lanes by device model and lane name, each with its
// MaxKernels heaviest kernels. Lanes of one model with two drivers (a
// machine mid-upgrade) are kept apart by the Builder and written as the
// one with more windows. Names are made ones a profile can hold (see
// truncName); build must not be empty.
func (b *Builder) Profile(build, host string, now time.Time) *Profile {
	p := &Profile{Format: Format, Build: truncName(build), Host: truncName(host), Written: now.UTC()}
	for _, l := range b.lanes {
		if l.lane.Windows == 0 {
			continue
		}
		out := l.out()
		// Looked up by the names as written: two lanes whose names differ
		// only past MaxName bytes or in control characters are one.
		if o := p.Lane(out.Model, out.Lane); o != nil {
			if o.Windows < out.Windows {
				*o = out
			}
			continue
		}
		if len(p.Lanes) < MaxLanes {
			p.Lanes = append(p.Lanes, out)
		}
	}
	slices.SortFunc(p.Lanes, func(a, b Lane) int {
		if c := cmp.Compare(a.Model, b.Model); c != 0 {
			return c
		}
		return cmp.Compare(a.Lane, b.Lane)
	})
	return p
}

// out is l as a profile's lane.
func (l *laneAcc) out() Lane {
	o := l.lane
	if l.idleWindows > 0 {
		w := float64(l.idleWindows)
		o.Idle = Causes{Host: l.idle.Host / w, Launch: l.idle.Launch / w, Copy: l.idle.Copy / w, Wait: l.idle.Wait / w, Other: l.idle.Other / w}
	}
	ks := make([]*kernelAcc, 0, len(l.kernels))
	for _, k := range l.kernels {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, heavier)
	o.CutBelow = l.cutBelow
	if len(ks) > MaxKernels {
		o.KernelsCut = len(ks) - MaxKernels
		o.CutBelow = max(o.CutBelow, ks[MaxKernels].time.Mean)
		ks = ks[:MaxKernels]
	}
	o.Kernels = make([]Kernel, 0, len(ks))
	names := make(map[string]bool, len(ks))
	launches := 0 // kept apart, the heaviest names' first
	for _, k := range ks {
		name := truncName(k.name)
		if name == "" {
			name = unnamed
		}
		if names[name] { // two long names alike in their first MaxName bytes
			continue
		}
		names[name] = true
		kr := Kernel{Name: name, Launches: k.launches / float64(max(k.runs, 1)), Time: k.time}
		if n := min(len(k.per), MaxLaunches); n > 1 && launches+n <= MaxLaneLaunches {
			kr.PerLaunch = slices.Clone(k.per[:n])
			launches += n
		}
		o.Kernels = append(o.Kernels, kr)
	}
	o.Model, o.Driver, o.Lane = truncName(o.Model), truncName(o.Driver), truncName(o.Lane)
	if o.Lane == "" {
		o.Lane = unnamed
	}
	return o
}

// unnamed stands for an empty lane or kernel name, which a profile cannot
// hold.
const unnamed = "(unnamed)"

// truncName cuts a name to MaxName bytes on a rune boundary, and replaces
// characters unsafe for a terminal (textsafe) with "?" and bytes that are
// not UTF-8 with U+FFFD, so that what the hub writes always reads back.
func truncName(s string) string {
	ok := len(s) <= MaxName
	for _, r := range s {
		if textsafe.Unsafe(r) || r == 0xfffd {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	out := make([]rune, 0, len(s))
	n := 0
	for _, r := range s {
		if textsafe.Unsafe(r) {
			r = '?'
		}
		if n+len(string(r)) > MaxName {
			break
		}
		n += len(string(r))
		out = append(out, r)
	}
	return string(out)
}
