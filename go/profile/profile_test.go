package profile

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
)

var testTime = time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)

// laneSpec is one lane's kernels (ns per span) for build.
type laneSpec struct {
	model, lane string
	kernels     map[string]float64
}

// buildLanes gathers windows of lanes whose kernels run at their times,
// each jittered by up to jitter either way (uniformly), with a lane's
// served time 1.1 times its busy time.
func buildLanes(buildName string, lanes []laneSpec, windows int, jitter float64, seed int64) *Profile {
	r := rand.New(rand.NewSource(seed))
	var b Builder
	for w := 0; w < windows; w++ {
		for _, ls := range lanes {
			wl := WindowLane{Model: ls.model, Driver: "13.0", Lane: ls.lane, Spans: 1}
			names := make([]string, 0, len(ls.kernels))
			for name := range ls.kernels {
				names = append(names, name)
			}
			slices.Sort(names) // the jitter of a seed goes to the same kernels every run
			for _, name := range names {
				t := ls.kernels[name] * (1 + jitter*(2*r.Float64()-1))
				wl.Kernels = append(wl.Kernels, WindowKernel{Name: name, Time: t, Launches: 1})
				wl.Busy += t
			}
			wl.Served = wl.Busy * 1.1
			b.Add(&wl)
		}
	}
	return b.Profile(buildName, "", testTime)
}

// build gathers windows of one lane, "decode" on an H100.
func build(times map[string]float64, windows int, jitter float64, seed int64) *Profile {
	return buildLanes("b", []laneSpec{{"NVIDIA H100", "decode", times}}, windows, jitter, seed)
}

// manyKernels is n kernels of 20 us to about 1 ms, "k00" the lightest.
func manyKernels(n int) map[string]float64 {
	m := make(map[string]float64, n)
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("k%02d", i)] = 20e3 * math.Pow(1.25, float64(i%18))
	}
	return m
}

func scaled(m map[string]float64, name string, by float64) map[string]float64 {
	o := make(map[string]float64, len(m))
	for k, v := range m {
		o[k] = v
	}
	o[name] *= by
	return o
}

// kernelChanges is d's one lane's kernel changes, "name change" each.
func kernelChanges(t *testing.T, d Diff) []string {
	t.Helper()
	if len(d.Lanes) != 1 {
		t.Fatalf("%d lanes compared, want 1: %+v", len(d.Lanes), d)
	}
	var s []string
	for _, k := range d.Lanes[0].Kernels {
		s = append(s, k.Label()+" "+string(k.Change))
	}
	return s
}

func TestCompareNamesTheKernelThatGrew(t *testing.T) {
	base := manyKernels(16)
	for _, w := range [][2]int{{5, 5}, {8, 5}, {20, 12}} {
		for seed := int64(0); seed < 40; seed++ {
			for _, c := range []struct {
				name string
				by   float64
				want Change
			}{{"k07", 1.2, Grew}, {"k03", 1.2, Grew}, {"k11", 0.8, Shrank}} {
				d := Compare(build(base, w[0], 0.03, 2*seed), build(scaled(base, c.name, c.by), w[1], 0.03, 2*seed+1), CompareOptions{})
				got := kernelChanges(t, d)
				if len(got) != 1 || got[0] != c.name+" "+string(c.want) {
					t.Fatalf("windows %v seed %d, %s times %.1f: changes %q, want %s %s alone", w, seed, c.name, c.by, got, c.name, c.want)
				}
				k := d.Lanes[0].Kernels[0]
				if math.Abs(k.After/k.Before-c.by) > 0.08 {
					t.Errorf("%s: %.0f -> %.0f ns, want a ratio of %.1f", c.name, k.Before, k.After, c.by)
				}
				if d.Worse() != (c.want == Grew) || !d.Changed() {
					t.Errorf("%s %s: Worse %v, Changed %v", c.name, c.want, d.Worse(), d.Changed())
				}
			}
		}
	}
}

func TestCompareRenamedKernelIsOneNewOneGone(t *testing.T) {
	base := manyKernels(12)
	renamed := scaled(base, "k05", 1)
	renamed["k05_v2"] = renamed["k05"]
	delete(renamed, "k05")
	for seed := int64(0); seed < 30; seed++ {
		d := Compare(build(base, 6, 0.03, 2*seed), build(renamed, 6, 0.03, 2*seed+1), CompareOptions{})
		got := kernelChanges(t, d)
		slices.Sort(got)
		if !slices.Equal(got, []string{"k05 gone", "k05_v2 new"}) {
			t.Fatalf("seed %d: %q, want k05 gone and k05_v2 new", seed, got)
		}
		for _, k := range d.Lanes[0].Kernels {
			if k.Change == New && (k.Before != 0 || k.After == 0) || k.Change == Gone && (k.After != 0 || k.Before == 0) {
				t.Errorf("%+v", k)
			}
		}
		if !d.Worse() { // a new kernel counts as worse
			t.Error("Worse false")
		}
	}
}

// TestCompareSameBuildNamesNothing: two profiles of one build, a few
// percent of jitter apart, never differ.
func TestCompareSameBuildNamesNothing(t *testing.T) {
	lanes := []laneSpec{{"NVIDIA H100", "decode", manyKernels(40)}, {"NVIDIA H100", "prefill", manyKernels(8)}}
	for seed := int64(0); seed < 200; seed++ {
		w := [][2]int{{5, 5}, {5, 9}, {30, 20}}[seed%3]
		d := Compare(buildLanes("a", lanes, w[0], 0.03, 2*seed), buildLanes("b", lanes, w[1], 0.03, 2*seed+1), CompareOptions{})
		if len(d.Lanes) != 2 || len(d.Skipped) != 0 {
			t.Fatalf("seed %d: %d lanes, skipped %q", seed, len(d.Lanes), d.Skipped)
		}
		if d.Changed() || d.Worse() {
			for i := range d.Lanes {
				t.Log(d.Lanes[i].Line())
			}
			t.Fatalf("seed %d, windows %v: the same build changed", seed, w)
		}
	}
}

// TestCompareCalibrated: with kernels far noisier than a graph decode's,
// and few windows, the same build is still told apart from itself about as
// rarely as the test's level says (a lane's three tests at 0.27% each),
// not one comparison in three (3 estimated standard errors of five windows
// are common; each of a lane's many kernels is a chance).
func TestCompareCalibrated(t *testing.T) {
	for _, c := range []struct {
		jitter  float64
		windows int
	}{{0.1, 5}, {0.2, 5}, {0.4, 8}, {0.4, 30}} {
		const runs = 300
		changed := 0
		for seed := int64(0); seed < runs; seed++ {
			if d := Compare(build(manyKernels(24), c.windows, c.jitter, 2*seed), build(manyKernels(24), c.windows, c.jitter, 2*seed+1), CompareOptions{}); d.Changed() {
				changed++
			}
		}
		if changed > runs*25/1000 {
			t.Errorf("jitter %.0f%%, %d windows: %d of %d comparisons of one build named a change", c.jitter*100, c.windows, changed, runs)
		}
	}
	// A large change still shows through much noise, given windows.
	found := 0
	for seed := int64(0); seed < 50; seed++ {
		d := Compare(build(manyKernels(24), 30, 0.2, 2*seed), build(scaled(manyKernels(24), "k09", 1.3), 30, 0.2, 2*seed+1), CompareOptions{})
		if slices.Contains(kernelChanges(t, d), "k09 grew") {
			found++
		}
	}
	if found < 45 {
		t.Errorf("30%% growth under 20%% jitter over 30 windows found %d times of 50", found)
	}
}

func TestTTwoSided(t *testing.T) {
	for _, c := range []struct{ t, df, p float64 }{
		{12.7062, 1, 0.05}, {2.776445, 4, 0.05}, {4.604095, 4, 0.01}, {2.085963, 20, 0.05},
		{3, 1e6, 0.0026998}, {3, 999, 0.0027668}, {0, 5, 1}, {1e3, 3, 2.20531e-9},
	} {
		if p := tTwoSided(c.t, c.df); math.Abs(p-c.p) > 1e-4*c.p+1e-12 {
			t.Errorf("tTwoSided(%v, %v) = %v, want %v", c.t, c.df, p, c.p)
		}
	}
}

func TestCompareLaneTime(t *testing.T) {
	base := manyKernels(6)
	before := build(base, 10, 0.02, 1)
	// The served time per step 10% longer, the kernels as they were.
	var b Builder
	r := rand.New(rand.NewSource(2))
	for w := 0; w < 10; w++ {
		wl := WindowLane{Model: "NVIDIA H100", Driver: "13.0", Lane: "decode", Spans: 1}
		for _, name := range []string{"k00", "k01", "k02", "k03", "k04", "k05"} {
			kt := base[name] * (1 + 0.02*(2*r.Float64()-1))
			wl.Kernels = append(wl.Kernels, WindowKernel{Name: name, Time: kt, Launches: 1})
			wl.Busy += kt
		}
		wl.Served = wl.Busy * 1.1 * 1.1
		b.Add(&wl)
	}
	d := Compare(before, b.Profile("slow host", "", testTime), CompareOptions{})
	l := d.Lanes[0]
	if l.TimeMoved != 1 || l.BusyMoved != 0 || len(l.Kernels) != 0 || !d.Worse() {
		t.Errorf("time %v busy %v: moved %d %d, kernels %v, worse %v", l.Time, l.Busy, l.TimeMoved, l.BusyMoved, l.Kernels, d.Worse())
	}
	if line := l.Line(); !strings.Contains(line, "time per step +") || !strings.Contains(line, "no kernel moved") {
		t.Errorf("line %q", line)
	}
	// A lane whose windows never settled has no served time: not a change.
	var u Builder
	for w := 0; w < 10; w++ {
		u.Add(&WindowLane{Model: "NVIDIA H100", Lane: "decode", Spans: 1, Busy: 1e6, Kernels: []WindowKernel{{Name: "k00", Time: 1e6}}})
	}
	unsettled := u.Profile("unsettled", "", testTime)
	if unsettled.Lanes[0].Time.N != 0 {
		t.Fatalf("time %+v", unsettled.Lanes[0].Time)
	}
	for _, d := range []Diff{Compare(before, unsettled, CompareOptions{}), Compare(unsettled, before, CompareOptions{})} {
		if l := d.Lanes[0]; l.TimeMoved != 0 {
			t.Errorf("a lane without served time moved: %s", l.Line())
		}
		if line := d.Lanes[0].Line(); !strings.Contains(line, "(not settled in both)") {
			t.Errorf("line %q", line)
		}
		var b strings.Builder
		_ = d.WriteTable(&b)
		if !strings.Contains(b.String(), "        -   ") {
			t.Errorf("table:\n%s", b.String())
		}
	}
}

// TestCompareCutKernels: a kernel cut from one profile's list (a lane of
// more than MaxKernels names) may have run there up to CutBelow: lighter
// than that, it is neither new nor gone; heavier, it is.
func TestCompareCutKernels(t *testing.T) {
	before := map[string]float64{}
	after := map[string]float64{}
	for i := 0; i < 64; i++ {
		before[fmt.Sprintf("h%02d", i)] = 100e3 + float64(i)*1e3
		if i < 58 {
			after[fmt.Sprintf("h%02d", i)] = 100e3 + float64(i)*1e3
		}
	}
	for i := 0; i < 10; i++ {
		before[fmt.Sprintf("l%d", i)] = 5e3 + float64(i)*1e3 // 5-14 us, above MovedMin
		after[fmt.Sprintf("l%d", i)] = 5e3 + float64(i)*1e3
	}
	after["x"] = 50e3
	for seed := int64(0); seed < 20; seed++ {
		b, a := build(before, 6, 0.03, 2*seed), build(after, 6, 0.03, 2*seed+1)
		bl, al := b.Lanes[0], a.Lanes[0]
		if len(bl.Kernels) != MaxKernels || bl.KernelsCut != 10 || math.Abs(bl.CutBelow-14e3) > 14e3*0.03 {
			t.Fatalf("before: %d kernels, %d cut below %.0f", len(bl.Kernels), bl.KernelsCut, bl.CutBelow)
		}
		if len(al.Kernels) != MaxKernels || al.KernelsCut != 5 || math.Abs(al.CutBelow-9e3) > 9e3*0.03 {
			t.Fatalf("after: %d kernels, %d cut below %.0f", len(al.Kernels), al.KernelsCut, al.CutBelow)
		}
		got := kernelChanges(t, Compare(b, a, CompareOptions{}))
		slices.Sort(got)
		want := []string{"h58 gone", "h59 gone", "h60 gone", "h61 gone", "h62 gone", "h63 gone", "x new"}
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: %q, want %q (l5-l9, listed after and cut before, are not new)", seed, got, want)
		}
		got = kernelChanges(t, Compare(a, b, CompareOptions{}))
		slices.Sort(got)
		want = []string{"h58 new", "h59 new", "h60 new", "h61 new", "h62 new", "h63 new", "x gone"}
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d, reversed: %q, want %q (l5-l9 are not gone)", seed, got, want)
		}
	}
}

func TestCompareSkipsFewWindows(t *testing.T) {
	base := manyKernels(4)
	for _, w := range [][2]int{{4, 8}, {8, 4}, {1, 1}} {
		d := Compare(build(base, w[0], 0.03, 1), build(base, w[1], 0.03, 2), CompareOptions{})
		want := fmt.Sprintf(`lane "decode" on NVIDIA H100: %d and %d windows, comparing needs 5`, w[0], w[1])
		if len(d.Lanes) != 0 || !slices.Equal(d.Skipped, []string{want}) {
			t.Errorf("windows %v: %d lanes, skipped %q, want %q", w, len(d.Lanes), d.Skipped, want)
		}
		if d.Changed() || d.Worse() {
			t.Error("a skipped lane changed")
		}
		o := CompareOptions{MinWindows: uint64(min(w[0], w[1]))}
		if d := Compare(build(base, w[0], 0.03, 1), build(base, w[1], 0.03, 2), o); len(d.Lanes) != 1 || len(d.Skipped) != 0 {
			t.Errorf("windows %v, MinWindows %d: %d lanes, skipped %q", w, o.MinWindows, len(d.Lanes), d.Skipped)
		}
	}
}

func TestCompareLanesInOneProfile(t *testing.T) {
	k := manyKernels(3)
	before := buildLanes("v1", []laneSpec{{"NVIDIA H100", "decode", k}, {"NVIDIA H100", "prefill", k}}, 6, 0.03, 1)
	after := buildLanes("v2", []laneSpec{{"NVIDIA H100", "decode", k}, {"NVIDIA H100", "sample", k}}, 6, 0.03, 2)
	d := Compare(before, after, CompareOptions{})
	want := []string{`lane "sample" on NVIDIA H100: only in build "v2"`, `lane "prefill" on NVIDIA H100: only in build "v1"`}
	if len(d.Lanes) != 1 || d.Lanes[0].Lane != "decode" || !slices.Equal(d.Skipped, want) {
		t.Errorf("lanes %+v, skipped %q; want decode compared, skipped %q", d.Lanes, d.Skipped, want)
	}
	if d.Before != "v1" || d.After != "v2" {
		t.Errorf("builds %q %q", d.Before, d.After)
	}
	if d := Compare(before, &Profile{Format: Format, Build: "empty"}, CompareOptions{}); len(d.Lanes) != 0 || len(d.Skipped) != 2 {
		t.Errorf("against an empty profile: %+v", d)
	}
}

func TestCompareAnyModel(t *testing.T) {
	k := manyKernels(5)
	h100 := buildLanes("v1", []laneSpec{{"NVIDIA H100", "decode", k}}, 6, 0.03, 1)
	h200 := buildLanes("v1", []laneSpec{{"NVIDIA H200", "decode", scaled(k, "k04", 0.7)}}, 6, 0.03, 2)
	d := Compare(h100, h200, CompareOptions{})
	if len(d.Lanes) != 0 || len(d.Skipped) != 2 {
		t.Errorf("across models without AnyModel: %+v", d)
	}
	d = Compare(h100, h200, CompareOptions{AnyModel: true})
	if len(d.Lanes) != 1 || len(d.Skipped) != 0 {
		t.Fatalf("AnyModel: %+v", d)
	}
	l := d.Lanes[0]
	if l.Model != "NVIDIA H100" || l.Model2 != "NVIDIA H200" || !slices.Equal(kernelChanges(t, d), []string{"k04 shrank"}) {
		t.Errorf("AnyModel: %+v", l)
	}
	if !strings.HasSuffix(l.Line(), "(after: NVIDIA H200)") {
		t.Errorf("line %q", l.Line())
	}
	// A lane's own model is matched first; AnyModel pairs only the rest.
	both := buildLanes("v2", []laneSpec{{"NVIDIA H200", "decode", k}, {"NVIDIA H100", "decode", scaled(k, "k04", 1.5)}}, 6, 0.03, 3)
	d = Compare(h100, both, CompareOptions{AnyModel: true})
	if len(d.Lanes) != 1 || d.Lanes[0].Model2 != "" || d.Lanes[0].Model != "NVIDIA H100" ||
		!slices.Equal(d.Skipped, []string{`lane "decode" on NVIDIA H200: only in build "v2"`}) {
		t.Errorf("own model first: %+v", d)
	}
}

// TestCompareMoreAndOrder: the largest changes (in ns per span, either
// way) first, MaxChanges of them, More counting the rest.
func TestCompareMoreAndOrder(t *testing.T) {
	before := map[string]float64{}
	after := map[string]float64{}
	for i := 0; i < 15; i++ {
		name := fmt.Sprintf("g%02d", i)
		before[name] = 100e3 + float64(i)*10e3
		after[name] = before[name] * 1.5 // grew by 50-120 us
	}
	before["s"] = 400e3 // shrank by 200 us: the largest
	after["s"] = 200e3
	after["n"] = 112.5e3 // new: between g13's growth (115 us) and g12's
	before["gone"] = 3e3
	d := Compare(build(before, 6, 0.005, 1), build(after, 6, 0.005, 2), CompareOptions{})
	got := kernelChanges(t, d)
	want := []string{"s shrank", "g14 grew", "g13 grew", "n new", "g12 grew", "g11 grew", "g10 grew", "g09 grew", "g08 grew", "g07 grew"}
	if !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if l := d.Lanes[0]; l.More != 8 { // g06..g00 and gone
		t.Errorf("More %d, want 8", l.More)
	}
	if line := d.Lanes[0].Line(); !strings.Contains(line, "and 8 more") || !strings.Contains(line, "s shrank -50.") || !strings.Contains(line, "n new (112.") {
		t.Errorf("line %q", line)
	}
}

func TestWriteTable(t *testing.T) {
	k := manyKernels(6)
	before := buildLanes("v1", []laneSpec{{"NVIDIA H100", "decode", k}, {"NVIDIA H100", "prefill", k}, {"NVIDIA H100", "gone", k}}, 6, 0.01, 1)
	after := buildLanes("v2", []laneSpec{{"NVIDIA H100", "decode", scaled(k, "k05", 1.4)}, {"NVIDIA H100", "prefill", k}}, 6, 0.01, 2)
	d := Compare(before, after, CompareOptions{})
	var b strings.Builder
	if err := d.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{
		"before: build \"v1\"\nafter:  build \"v2\"\n",
		"decode         NVIDIA H100                     6/6",
		"kernels that changed in lane \"decode\" (per step):\n  grew   ",
		"%  k05\n",
		`not compared: lane "gone" on NVIDIA H100: only in build "v1"`,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "no lane and no kernel changed") || strings.Contains(out, `in lane "prefill"`) {
		t.Errorf("table:\n%s", out)
	}
	// The lane's busy time moved (k05 is most of it): starred.
	if !strings.Contains(out, "%*") {
		t.Errorf("no starred change:\n%s", out)
	}
	same := Compare(before, before, CompareOptions{})
	b.Reset()
	_ = same.WriteTable(&b)
	if !strings.Contains(b.String(), "no lane and no kernel changed") || strings.Contains(b.String(), "*") {
		t.Errorf("same build:\n%s", b.String())
	}
	none := Compare(before, &Profile{Format: Format, Build: "v3"}, CompareOptions{})
	b.Reset()
	_ = none.WriteTable(&b)
	if !strings.Contains(b.String(), "no lane compared") {
		t.Errorf("nothing compared:\n%s", b.String())
	}
}

func TestCompareDrivers(t *testing.T) {
	profile := func(driver string) *Profile {
		var b Builder
		for w := 0; w < 6; w++ {
			b.Add(&WindowLane{Model: "NVIDIA H100", Driver: driver, Lane: "decode", Spans: 2, Served: 2e6, Busy: 1e6,
				Kernels: []WindowKernel{{Name: "gemm", Time: 1e6, Launches: 3}}})
		}
		return b.Profile(driver, "", testTime)
	}
	d := Compare(profile("12.8"), profile("13.0"), CompareOptions{})
	l := d.Lanes[0]
	if l.Driver != "12.8" || l.Driver2 != "13.0" || d.Changed() {
		t.Fatalf("%+v", d)
	}
	if !strings.HasSuffix(l.Line(), "(driver 12.8 -> 13.0)") {
		t.Errorf("line %q", l.Line())
	}
	var b strings.Builder
	_ = d.WriteTable(&b)
	if !strings.Contains(b.String(), `lane "decode": driver 12.8 before, 13.0 after`) {
		t.Errorf("table:\n%s", b.String())
	}
	j, _ := json.Marshal(l)
	if !strings.Contains(string(j), `"driver":"12.8","driver_after":"13.0"`) {
		t.Errorf("JSON %s", j)
	}
	same := Compare(profile("13.0"), profile("13.0"), CompareOptions{})
	if j, _ := json.Marshal(same.Lanes[0]); strings.Contains(string(j), "driver") || strings.Contains(same.Lanes[0].Line(), "driver") {
		t.Errorf("one driver: %s, %s", j, same.Lanes[0].Line())
	}
}
