package profile

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// What Compare calls a change. A lane is compared once both profiles have
// MinWindows windows of it: five windows put the standard error of a
// kernel's mean at under half its window-to-window spread, so a kernel that
// moved by MovedRatio is told from one that jitters by a few percent
// (about 3% between windows of a graph decode on an H100) while the first
// comparison still comes within a minute at the default window period (10
// s). A kernel moved when its time per span changed by MovedRatio of the
// old, by MovedMin, and significantly; a lane's time or busy time by
// LaneRatio and significantly. Significantly: Welch's t-test rejects "the
// same mean" at the level of Sigmas standard errors of a normal (0.27%,
// two-sided), with the Student's t of the few windows' degrees of freedom
// (3 standard errors of five windows' means happen by chance 20 times as
// often as 0.27%), and for kernels that level shared among the lane's
// kernels (Bonferroni), so that a lane of 64 noisy kernels is named no
// more often than one of a single kernel.
const (
	MinWindows = 5
	MovedRatio = 0.10
	MovedMin   = 2000.0 // ns per span
	LaneRatio  = 0.05
	Sigmas     = 3.0
	MaxChanges = 10 // kernel changes listed per lane, the largest
)

// Change is how a kernel name changed between two profiles.
type Change string

// The changes.
const (
	Grew   Change = "grew"
	Shrank Change = "shrank"
	New    Change = "new"  // run after, not before
	Gone   Change = "gone" // run before, not after
)

// KernelChange is one kernel name that changed in a lane, or one of its
// launches (Launch: the n-th in a span) where the name's sum did not.
type KernelChange struct {
	Name   string  `json:"name"`
	Launch int     `json:"launch,omitempty"`
	Change Change  `json:"change"`
	Before float64 `json:"before_ns"` // per span; 0 for a new one
	After  float64 `json:"after_ns"`  // per span; 0 for a gone one
}

// Label is the kernel's name, and its launch where the change is one
// launch's: "gemm (launch 17)".
func (k *KernelChange) Label() string {
	if k.Launch > 0 {
		return fmt.Sprintf("%.200s (launch %d)", k.Name, k.Launch)
	}
	return k.Name
}

// LaneDiff compares one lane of two profiles.
type LaneDiff struct {
	Model  string `json:"model"`
	Lane   string `json:"lane"`
	Model2 string `json:"model_after,omitempty"` // the after profile's model, when compared across models
	// Drivers, when they differ.
	Driver  string     `json:"driver,omitempty"`
	Driver2 string     `json:"driver_after,omitempty"`
	Windows [2]uint64  `json:"windows"`
	Time    [2]float64 `json:"time_ns"` // per span outside windows, before and after; 0 where no window settled
	Busy    [2]float64 `json:"busy_ns"` // per span
	// TimeMoved and BusyMoved: +1 grew, -1 shrank, 0 neither (by
	// LaneRatio and Sigmas).
	TimeMoved int `json:"time_moved"`
	BusyMoved int `json:"busy_moved"`
	// Kernels are the kernel names, or launches of a name, that changed,
	// the largest change in time per span first (at most MaxChanges; More
	// counts the rest).
	Kernels []KernelChange `json:"kernels"`
	More    int            `json:"more,omitempty"`
}

// Worse reports whether the lane's time or busy time per span grew, or a
// kernel grew or came new.
func (l *LaneDiff) Worse() bool {
	if l.TimeMoved > 0 || l.BusyMoved > 0 {
		return true
	}
	for _, k := range l.Kernels {
		if k.Change == Grew || k.Change == New {
			return true
		}
	}
	return false
}

// Verdict is the lane's comparison in a word: "WORSE" (Worse), "changed"
// (Changed otherwise) or "no change".
func (l *LaneDiff) Verdict() string {
	switch {
	case l.Worse():
		return "WORSE"
	case l.Changed():
		return "changed"
	}
	return "no change"
}

// Changed reports whether anything moved in the lane.
func (l *LaneDiff) Changed() bool {
	return l.TimeMoved != 0 || l.BusyMoved != 0 || len(l.Kernels) > 0
}

// Diff compares two profiles.
type Diff struct {
	Before string     `json:"before"` // builds
	After  string     `json:"after"`
	Lanes  []LaneDiff `json:"lanes"`
	// Skipped says, a line each, why a lane was not compared.
	Skipped []string `json:"skipped,omitempty"`
}

// Worse reports whether any lane got worse (LaneDiff.Worse).
func (d *Diff) Worse() bool {
	for i := range d.Lanes {
		if d.Lanes[i].Worse() {
			return true
		}
	}
	return false
}

// Changed reports whether any lane changed.
func (d *Diff) Changed() bool {
	for i := range d.Lanes {
		if d.Lanes[i].Changed() {
			return true
		}
	}
	return false
}

// CompareOptions are Compare's options.
type CompareOptions struct {
	// AnyModel compares a lane with the same lane of another device model
	// where its own model is not in the other profile (two machines).
	AnyModel bool
	// MinWindows overrides MinWindows when positive.
	MinWindows uint64
}

// Compare says what changed from before to after, lane by lane (by device
// model and lane name).
func Compare(before, after *Profile, o CompareOptions) Diff {
	minw := uint64(MinWindows)
	if o.MinWindows > 0 {
		minw = o.MinWindows
	}
	d := Diff{Before: before.Build, After: after.Build}
	used := make([]bool, len(before.Lanes))
	match := func(a *Lane, anyModel bool) int {
		for i := range before.Lanes {
			b := &before.Lanes[i]
			if !used[i] && b.Lane == a.Lane && (b.Model == a.Model || anyModel) {
				return i
			}
		}
		return -1
	}
	pairs := make([]int, len(after.Lanes))
	for j := range after.Lanes {
		pairs[j] = match(&after.Lanes[j], false)
		if pairs[j] >= 0 {
			used[pairs[j]] = true
		}
	}
	for j := range after.Lanes {
		if pairs[j] < 0 && o.AnyModel {
			if pairs[j] = match(&after.Lanes[j], true); pairs[j] >= 0 {
				used[pairs[j]] = true
			}
		}
	}
	for j := range after.Lanes {
		a := &after.Lanes[j]
		if pairs[j] < 0 {
			d.Skipped = append(d.Skipped, fmt.Sprintf("lane %q on %s: only in %s", a.Lane, ModelName(a.Model), buildName(after.Build)))
			continue
		}
		b := &before.Lanes[pairs[j]]
		if b.Windows < minw || a.Windows < minw {
			d.Skipped = append(d.Skipped, fmt.Sprintf("lane %q on %s: %d and %d windows, comparing needs %d", a.Lane, ModelName(a.Model), b.Windows, a.Windows, minw))
			continue
		}
		d.Lanes = append(d.Lanes, compareLane(b, a))
	}
	for i := range before.Lanes {
		if !used[i] {
			b := &before.Lanes[i]
			d.Skipped = append(d.Skipped, fmt.Sprintf("lane %q on %s: only in %s", b.Lane, ModelName(b.Model), buildName(before.Build)))
		}
	}
	return d
}

// ModelName is a device model as text, saying so when it has no name.
func ModelName(m string) string {
	if m == "" {
		return "an unnamed device"
	}
	return m
}

func buildName(b string) string { return fmt.Sprintf("build %q", b) }

// compareLane compares lane b (before) with a (after).
func compareLane(b, a *Lane) LaneDiff {
	ld := LaneDiff{Model: b.Model, Lane: a.Lane, Windows: [2]uint64{b.Windows, a.Windows},
		Time: [2]float64{b.Time.Mean, a.Time.Mean}, Busy: [2]float64{b.Busy.Mean, a.Busy.Mean}}
	if a.Model != b.Model {
		ld.Model2 = a.Model
	}
	if a.Driver != b.Driver {
		ld.Driver, ld.Driver2 = b.Driver, a.Driver
	}
	alpha := math.Erfc(Sigmas / math.Sqrt2)
	ld.TimeMoved = moved(b.Time, a.Time, LaneRatio, 0, alpha)
	ld.BusyMoved = moved(b.Busy, a.Busy, LaneRatio, 0, alpha)
	before := make(map[string]*Kernel, len(b.Kernels))
	for i := range b.Kernels {
		before[b.Kernels[i].Name] = &b.Kernels[i]
	}
	tests := 0
	for i := range a.Kernels {
		if o := before[a.Kernels[i].Name]; o != nil {
			tests += 1 + min(len(o.PerLaunch), len(a.Kernels[i].PerLaunch))
		}
	}
	alphaK := alpha / float64(max(tests, 1))
	spread := laneSpread(b, a)
	var ch []KernelChange
	for i := range a.Kernels {
		k := &a.Kernels[i]
		o := before[k.Name]
		if o == nil {
			// A name cut from the before profile may have run there: new
			// only if heavier than anything cut.
			if k.Time.Mean >= MovedMin && k.Time.Mean > b.CutBelow*(1+MovedRatio) {
				ch = append(ch, KernelChange{Name: k.Name, Change: New, After: k.Time.Mean})
			}
			continue
		}
		delete(before, k.Name)
		switch movedAbove(o.Time, k.Time, MovedRatio, MovedMin, alphaK, spread) {
		case 1:
			ch = append(ch, KernelChange{Name: k.Name, Change: Grew, Before: o.Time.Mean, After: k.Time.Mean})
		case -1:
			ch = append(ch, KernelChange{Name: k.Name, Change: Shrank, Before: o.Time.Mean, After: k.Time.Mean})
		default:
			// The name's sum did not move: one of its launches may have
			// (one layer's matmul among many of the name).
			// The name's spread: the larger side's, with its own degrees
			// of freedom.
			v, df := pooled(o.PerLaunch)
			if va, da := pooled(k.PerLaunch); va > v {
				v, df = va, da
			}
			for n := range min(len(o.PerLaunch), len(k.PerLaunch)) {
				x, y := o.PerLaunch[n], k.PerLaunch[n]
				switch movedLaunch(x, y, v, df, alphaK, spread) {
				case 1:
					ch = append(ch, KernelChange{Name: k.Name, Launch: n + 1, Change: Grew, Before: x.Mean, After: y.Mean})
				case -1:
					ch = append(ch, KernelChange{Name: k.Name, Launch: n + 1, Change: Shrank, Before: x.Mean, After: y.Mean})
				}
			}
		}
	}
	for _, o := range before {
		if o.Time.Mean >= MovedMin && o.Time.Mean > a.CutBelow*(1+MovedRatio) {
			ch = append(ch, KernelChange{Name: o.Name, Change: Gone, Before: o.Time.Mean})
		}
	}
	slices.SortFunc(ch, func(x, y KernelChange) int {
		if c := cmp.Compare(math.Abs(y.After-y.Before), math.Abs(x.After-x.Before)); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Name, y.Name); c != 0 {
			return c
		}
		return cmp.Compare(x.Launch, y.Launch)
	})
	if len(ch) > MaxChanges {
		ld.More = len(ch) - MaxChanges
		ch = ch[:MaxChanges]
	}
	ld.Kernels = ch
	return ld
}

// moved says whether a moved from b: +1 up, -1 down, 0 neither. It moved
// when the difference of the means is at least ratio of b's, at least
// floor, and significant at level alpha by Welch's t-test. A Stat of no
// values never moved; where neither has a spread (fewer than 2 values, or
// all alike) the ratio and the floor decide alone.
func moved(b, a Stat, ratio, floor, alpha float64) int {
	return movedAbove(b, a, ratio, floor, alpha, 0)
}

// movedAbove is moved with each side's window-to-window variance at least
// spread times its mean squared: the spread a lane's kernels share
// (laneSpread). A kernel whose few windows all fell on one phase of a
// bimodal noise reads no spread of its own, and alone its two builds'
// phases would read as a change.
func movedAbove(b, a Stat, ratio, floor, alpha, spread float64) int {
	if b.N == 0 || a.N == 0 {
		return 0
	}
	diff := a.Mean - b.Mean
	mag := math.Abs(diff)
	if mag < ratio*b.Mean || mag < floor || mag == 0 {
		return 0
	}
	vb, va := floored(b, spread), floored(a, spread)
	if se := math.Sqrt(vb + va); se > 0 {
		// Welch–Satterthwaite: the degrees of freedom of the difference.
		den := 0.0
		if b.N > 1 {
			den += vb * vb / float64(b.N-1)
		}
		if a.N > 1 {
			den += va * va / float64(a.N-1)
		}
		if tTwoSided(mag/se, (vb+va)*(vb+va)/den) >= alpha {
			return 0
		}
	}
	if diff > 0 {
		return 1
	}
	return -1
}

// floored is s's squared standard error, its variance at least spread
// times its mean squared.
func floored(s Stat, spread float64) float64 {
	v := 0.0
	if s.N > 1 {
		v = s.M2 / float64(s.N-1)
	}
	return max(v, spread*s.Mean*s.Mean) / float64(s.N)
}

// laneSpread is the relative window-to-window variance the kernels of a
// lane share, in both builds: the median over the kernels with two
// windows or more of their variance over their mean squared (0 with
// none). Kernels of one lane jitter alike (they share the clocks, the
// memory and the host), so one of them whose windows all agree has not
// shown it jitters less.
func laneSpread(b, a *Lane) float64 {
	var rv []float64
	for _, l := range [2]*Lane{b, a} {
		for i := range l.Kernels {
			if s := l.Kernels[i].Time; s.N > 1 && s.Mean > 0 {
				rv = append(rv, s.M2/float64(s.N-1)/(s.Mean*s.Mean))
			}
		}
	}
	if len(rv) == 0 {
		return 0
	}
	slices.Sort(rv)
	return rv[len(rv)/2]
}

// pooled is the variance of one window's value that a name's launches
// share (the mean of their variances, weighted by degrees of freedom),
// and its degrees of freedom; 0, 0 without two windows of any launch.
func pooled(st []Stat) (v, df float64) {
	var m2 float64
	for _, s := range st {
		if s.N > 1 {
			m2 += s.M2
			df += float64(s.N - 1)
		}
	}
	if df == 0 {
		return 0, 0
	}
	return m2 / df, df
}

// movedLaunch is moved for one launch of a name, b before and a after,
// whose noise is the name's: the launches of one kernel name in a lane (a
// GEMM across layers) jitter alike, so the shared level alpha applies to
// the launch's difference over the name's pooled variance v (of df degrees
// of freedom). Five windows of one launch alone leave four degrees of
// freedom, whose Student's tails hid a launch that grew 41% on an H100 (t
// = 14) under a level shared by 240 tests. The launch's own windows must
// still show the move at the unshared level (Welch's test, 3 standard
// errors): one window's hiccup of a launch raises its mean but also its
// own spread, and is not named.
func movedLaunch(b, a Stat, v, df, alpha, spread float64) int {
	m := movedAbove(b, a, MovedRatio, MovedMin, math.Erfc(Sigmas/math.Sqrt2), spread)
	if m == 0 {
		return 0
	}
	se := math.Sqrt(v/float64(b.N) + v/float64(a.N))
	if se > 0 && df > 0 && tTwoSided(math.Abs(a.Mean-b.Mean)/se, df) >= alpha {
		return 0
	}
	return m
}

// tTwoSided is the probability that Student's t of df degrees of freedom
// is t or more away from 0.
func tTwoSided(t, df float64) float64 {
	if df > 1000 { // the normal's, within 0.5% of the level
		return math.Erfc(t / math.Sqrt2)
	}
	return betaInc(df/(df+t*t), df/2, 0.5)
}

// betaInc is the regularized incomplete beta function I_x(a, b), from its
// continued fraction (Numerical Recipes, 6.4).
func betaInc(x, a, b float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(x, a, b) / a
	}
	return 1 - front*betaCF(1-x, b, a)/b
}

// betaCF evaluates betaInc's continued fraction by Lentz's method.
func betaCF(x, a, b float64) float64 {
	const tiny, eps = 1e-300, 1e-14
	nz := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	c, d := 1.0, 1/nz(1-(a+b)*x/(a+1))
	h := d
	for m := 1.0; m <= 300; m++ {
		aa := m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		d = 1 / nz(1+aa*d)
		c = nz(1 + aa/c)
		h *= d * c
		aa = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		d = 1 / nz(1+aa*d)
		c = nz(1 + aa/c)
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}

// Percent is after's change from before, in percent (+20.5); +Inf from 0.
func Percent(before, after float64) float64 {
	if before == 0 {
		if after == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return (after/before - 1) * 100
}

// Line is one lane's changes as one line of text, for a log.
func (l *LaneDiff) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lane %q on %s: ", l.Lane, ModelName(l.Model))
	if l.Time[0] == 0 || l.Time[1] == 0 {
		fmt.Fprintf(&b, "time per step %s -> %s (not settled in both)", orDash(l.Time[0]), orDash(l.Time[1]))
	} else {
		fmt.Fprintf(&b, "time per step %s (%s -> %s)", PercentText(l.Time[0], l.Time[1]), Micros(l.Time[0]), Micros(l.Time[1]))
	}
	fmt.Fprintf(&b, ", busy %s (%s -> %s)", PercentText(l.Busy[0], l.Busy[1]), Micros(l.Busy[0]), Micros(l.Busy[1]))
	if len(l.Kernels) == 0 {
		b.WriteString("; no kernel moved")
	}
	for i, k := range l.Kernels {
		if i == 0 {
			b.WriteString("; kernels: ")
		} else {
			b.WriteString(", ")
		}
		if k.Launch > 0 {
			fmt.Fprintf(&b, "%.120s (launch %d) %s", k.Name, k.Launch, k.Change)
		} else {
			fmt.Fprintf(&b, "%.120s %s", k.Name, k.Change)
		}
		switch k.Change {
		case New:
			fmt.Fprintf(&b, " (%s)", Micros(k.After))
		case Gone:
			fmt.Fprintf(&b, " (was %s)", Micros(k.Before))
		default:
			fmt.Fprintf(&b, " %s (%s -> %s)", PercentText(k.Before, k.After), Micros(k.Before), Micros(k.After))
		}
	}
	if l.More > 0 {
		fmt.Fprintf(&b, " and %d more", l.More)
	}
	if l.Model2 != "" {
		fmt.Fprintf(&b, " (after: %s)", l.Model2)
	}
	if l.Driver != l.Driver2 {
		fmt.Fprintf(&b, " (driver %s -> %s)", orNone(l.Driver), orNone(l.Driver2))
	}
	return b.String()
}

// PercentText is Percent as text: "+20.5%", or "new" from 0.
func PercentText(before, after float64) string {
	p := Percent(before, after)
	if math.IsInf(p, 1) {
		return "new"
	}
	return fmt.Sprintf("%+.1f%%", p)
}

// Micros is a time in ns per span as microseconds: "12.3 us".
func Micros(ns float64) string { return fmt.Sprintf("%.1f us", ns/1e3) }

// WriteTable writes d as a table a person reads: a line per lane, then its
// changed kernels. A change that counts (significant, past its ratio) is
// starred; a lane time of "-" is one no window settled.
func (d *Diff) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "before: build %q\nafter:  build %q\n\n", d.Before, d.After)
	if len(d.Lanes) > 0 {
		fmt.Fprintf(&b, "%-14s %-26s %8s %12s %12s %8s %12s %12s %8s\n", "lane", "device", "windows", "time before", "time after", "change", "busy before", "busy after", "change")
	}
	for i := range d.Lanes {
		l := &d.Lanes[i]
		tb, ta, tc := Micros(l.Time[0]), Micros(l.Time[1]), mark(PercentText(l.Time[0], l.Time[1]), l.TimeMoved)
		if l.Time[0] == 0 || l.Time[1] == 0 {
			tb, ta, tc = orDash(l.Time[0]), orDash(l.Time[1]), "-"
		}
		fmt.Fprintf(&b, "%-14.40s %-26.40s %8s %12s %12s %8s %12s %12s %8s\n", l.Lane, ModelName(l.Model), fmt.Sprintf("%d/%d", l.Windows[0], l.Windows[1]),
			tb, ta, tc, Micros(l.Busy[0]), Micros(l.Busy[1]), mark(PercentText(l.Busy[0], l.Busy[1]), l.BusyMoved))
	}
	for i := range d.Lanes {
		l := &d.Lanes[i]
		if l.Model2 != "" {
			fmt.Fprintf(&b, "lane %q: before on %s, after on %s\n", l.Lane, ModelName(l.Model), ModelName(l.Model2))
		}
		if l.Driver != l.Driver2 {
			fmt.Fprintf(&b, "lane %q: driver %s before, %s after\n", l.Lane, orNone(l.Driver), orNone(l.Driver2))
		}
	}
	for i := range d.Lanes {
		l := &d.Lanes[i]
		if len(l.Kernels) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nkernels that changed in lane %q (per step):\n", l.Lane)
		for _, k := range l.Kernels {
			fmt.Fprintf(&b, "  %-7s %12s %12s %8s  %s\n", k.Change, Micros(k.Before), Micros(k.After), PercentText(k.Before, k.After), k.Label())
		}
		if l.More > 0 {
			fmt.Fprintf(&b, "  and %d more\n", l.More)
		}
	}
	switch {
	case len(d.Lanes) == 0:
		b.WriteString("no lane compared\n")
	case !d.Changed():
		b.WriteString("\nno lane and no kernel changed\n")
	}
	if len(d.Skipped) > 0 {
		b.WriteString("\n")
	}
	for _, s := range d.Skipped {
		fmt.Fprintf(&b, "not compared: %s\n", s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(ns float64) string {
	if ns == 0 {
		return "-"
	}
	return Micros(ns)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// mark stars a change that counts.
func mark(s string, moved int) string {
	if moved != 0 {
		return s + "*"
	}
	return s
}
