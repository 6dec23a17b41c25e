package profile

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// decoder is a profile of a decode lane like issue 51's torch decoder: 92
// launches of one matmul kernel a step (two a layer), 46 of a norm and of
// an activation, every launch jittered by jitter; launch deep (1-based, 0
// none) of the matmul takes by as long.
func decoder(build string, windows int, jitter float64, deep int, by float64, seed uint64) *Profile {
	rng := rand.New(rand.NewPCG(seed, 51))
	j := func(x float64) float64 { return x * (1 + jitter*(2*rng.Float64()-1)) }
	var b Builder
	for w := 0; w < windows; w++ {
		gemm := make([]float64, 92)
		norm := make([]float64, 46)
		act := make([]float64, 46)
		var gs, ns, as float64
		for i := range gemm {
			gemm[i] = j(20e3)
			if i+1 == deep {
				gemm[i] *= by
			}
			gs += gemm[i]
		}
		for i := range norm {
			norm[i], act[i] = j(3e3), j(2e3)
			ns, as = ns+norm[i], as+act[i]
		}
		b.Add(&WindowLane{Model: "NVIDIA H200", Driver: "13.0", Lane: "decode", Spans: 1, Served: j(2.2e6), Busy: gs + ns + as,
			Kernels: []WindowKernel{
				{Name: "sm90_xmma_gemm_bf16", Time: gs, Launches: 92, PerLaunch: gemm},
				{Name: "layer_norm", Time: ns, Launches: 46, PerLaunch: norm},
				{Name: "gelu", Time: as, Launches: 46, PerLaunch: act},
				{Name: "argmax", Time: j(5e3), Launches: 1, PerLaunch: []float64{5e3}},
			}})
	}
	return b.Profile(build, "", testTime)
}

// One matmul of 92 launches of its name made twice as deep: the name's sum
// moves by a 92nd of 2x (1.1%, under MovedRatio), so the launch is named,
// alone; the same build names nothing, in 100 pairs of noisy profiles.
func TestCompareNamesTheLaunchThatGrew(t *testing.T) {
	before := decoder("v1", 6, 0.03, 0, 1, 1)
	after := decoder("v2", 6, 0.03, 17, 2, 2)
	kernel := func(name string) *Kernel {
		for i, k := range before.Lane("NVIDIA H200", "decode").Kernels {
			if k.Name == name {
				return &before.Lanes[0].Kernels[i]
			}
		}
		t.Fatalf("no kernel %q", name)
		return nil
	}
	if k := kernel("sm90_xmma_gemm_bf16"); len(k.PerLaunch) != 92 || k.PerLaunch[16].N != 6 {
		t.Fatalf("per launch: %+v", k)
	}
	if k := kernel("argmax"); k.PerLaunch != nil {
		t.Fatalf("a name launched once keeps no launches apart: %+v", k)
	}
	d := Compare(before, after, CompareOptions{})
	if got := kernelChanges(t, d); len(got) != 1 || got[0] != "sm90_xmma_gemm_bf16 (launch 17) grew" {
		t.Fatalf("changes %q, want the 17th launch of the matmul alone", got)
	}
	ld := d.Lanes[0]
	if !ld.Worse() || !strings.Contains(ld.Line(), "sm90_xmma_gemm_bf16 (launch 17) grew +") {
		t.Errorf("line %q", ld.Line())
	}
	var b strings.Builder
	_ = d.WriteTable(&b)
	if !strings.Contains(b.String(), "sm90_xmma_gemm_bf16 (launch 17)") {
		t.Errorf("table:\n%s", b.String())
	}
	if j, _ := json.Marshal(ld.Kernels[0]); !strings.Contains(string(j), `"launch":17`) {
		t.Errorf("JSON %s", j)
	}
	named := 0
	for s := uint64(0); s < 100; s++ {
		if d := Compare(decoder("v1", 6, 0.03, 0, 1, 100+2*s), decoder("v1", 6, 0.03, 0, 1, 101+2*s), CompareOptions{}); d.Changed() {
			named++
		}
	}
	if named > 3 {
		t.Errorf("the same build named a change in %d of 100 pairs", named)
	}
}

// gemm91 is a profile of one lane whose GEMM kernel runs 91 times a step,
// 5.7 us each with an H100's spread between windows (about 80 ns), as
// profile_restart.py's decoder wrote it: launch n (1-based) takes at[w]
// in window w instead, where at is given.
func gemm91(build string, n int, at []float64, seed uint64) *Profile {
	rng := rand.New(rand.NewPCG(seed, 91))
	var b Builder
	for w := 0; w < MinWindows; w++ {
		per := make([]float64, 91)
		var sum float64
		for i := range per {
			per[i] = 5.7e3 * (1 + 0.025*(2*rng.Float64()-1))
			if i+1 == n {
				per[i] = at[w]
			}
			sum += per[i]
		}
		b.Add(&WindowLane{Model: "NVIDIA H100 80GB HBM3", Driver: "13.0", Lane: "decode", Spans: 1, Served: 890e3, Busy: 794e3,
			Kernels: []WindowKernel{{Name: "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT", Time: sum, Launches: 91, PerLaunch: per}}})
	}
	return b.Profile(build, "", testTime)
}

// On an H100 (bench/results/h100-profile-restart) a launch grew 41%, 5.7
// to 8.0 us, with a spread of its own four times its siblings': at the
// first comparison, five windows a side, its own windows alone (Student's
// t of four degrees of freedom, t = 14) were not enough under the level
// shared by every test of the lane. Against the name's pooled spread it is
// named; one window's hiccup of a launch (12 us once in five) is not, and
// the same build names nothing in 100 pairs.
func TestCompareNamesALaunchAtTheFirstComparison(t *testing.T) {
	same := []float64{5.7e3, 5.7e3, 5.7e3, 5.7e3, 5.7e3}
	before := gemm91("v1-again", 35, same, 1)
	d := Compare(before, gemm91("v2", 35, []float64{7.6e3, 7.8e3, 8.0e3, 8.2e3, 8.5e3}, 2), CompareOptions{})
	if got := kernelChanges(t, d); len(got) != 1 || got[0] != "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT (launch 35) grew" {
		t.Errorf("changes %q, want launch 35 grown, alone", got)
	}
	d = Compare(before, gemm91("v2", 35, []float64{5.7e3, 5.7e3, 17.7e3, 5.7e3, 5.7e3}, 2), CompareOptions{})
	if got := kernelChanges(t, d); len(got) != 0 {
		t.Errorf("changes %q after one window's 12 us hiccup of launch 35: want none", got)
	}
	named := 0
	for s := uint64(0); s < 100; s++ {
		if d := Compare(gemm91("v1", 0, nil, 100+2*s), gemm91("v1", 0, nil, 101+2*s), CompareOptions{}); d.Changed() {
			named++
		}
	}
	if named > 3 {
		t.Errorf("the same build named a change in %d of 100 pairs", named)
	}
}

// A name whose sum moved is named as a name, not launch by launch.
func TestCompareNameMovedNotItsLaunches(t *testing.T) {
	before := decoder("v1", 6, 0.01, 0, 1, 1)
	var b Builder
	for w := 0; w < 6; w++ {
		per := make([]float64, 92)
		for i := range per {
			per[i] = 30e3 // every launch 50% longer
		}
		b.Add(&WindowLane{Model: "NVIDIA H200", Driver: "13.0", Lane: "decode", Spans: 1, Served: 2.2e6, Busy: 2e6,
			Kernels: []WindowKernel{{Name: "sm90_xmma_gemm_bf16", Time: 92 * 30e3, Launches: 92, PerLaunch: per}}})
	}
	d := Compare(before, b.Profile("v2", "", testTime), CompareOptions{})
	for _, k := range d.Lanes[0].Kernels {
		if k.Name == "sm90_xmma_gemm_bf16" && (k.Launch != 0 || k.Change != Grew) {
			t.Errorf("%+v: want the name grown, no launch", k)
		}
	}
}

// A lane keeps at most MaxLaneLaunches launches apart in a profile and a
// name at most MaxLaunches; in memory, keptLaunches, however many names
// and launches it runs (here 512 names of 256 launches, half of them new
// each window).
func TestBuilderLaunchesBounded(t *testing.T) {
	var b Builder
	for w := 0; w < 6; w++ {
		var ks []WindowKernel
		for i := 0; i < 2*keptKernels; i++ {
			per := make([]float64, 2*MaxLaunches)
			for n := range per {
				per[n] = float64(1000 + i)
			}
			ks = append(ks, WindowKernel{Name: fmt.Sprintf("k%03d-%d", i, w%2*i%2), Time: float64(1000+i) * float64(len(per)), Launches: float64(len(per)), PerLaunch: per})
		}
		b.Add(&WindowLane{Lane: "prefill", Spans: 1, Busy: 1e9, Kernels: ks})
		sum := 0
		for _, k := range b.lanes[0].kernels {
			sum += len(k.curPer)
			if len(k.per) != len(k.curPer) || len(k.per) > MaxLaunches {
				t.Fatalf("window %d: %s keeps %d launches' averages and %d of this window", w, k.name, len(k.per), len(k.curPer))
			}
		}
		if n := b.lanes[0].perLaunch; n > keptLaunches || n != sum {
			t.Fatalf("window %d: %d launches in memory (the kernels hold %d), at most %d", w, n, sum, keptLaunches)
		}
	}
	l := b.Profile("x", "", testTime).Lanes[0]
	total := 0
	for _, k := range l.Kernels {
		total += len(k.PerLaunch)
	}
	if total == 0 || total > MaxLaneLaunches {
		t.Errorf("%d launches kept apart in the lane, want 1 to %d", total, MaxLaneLaunches)
	}
	if err := (&Profile{Format: Format, Build: "x", Lanes: []Lane{l}}).Check(); err != nil {
		t.Error(err)
	}
}

// Launch lists past their bounds, given twice, or with more windows than
// the lane are refused by name.
func TestParseLaunchesBounded(t *testing.T) {
	stat := `{"n":1,"mean":1,"m2":0}`
	list := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat(stat+",", n), ",") + "]" }
	doc := func(kernels string) string {
		return `{"format":"` + Format + `","build":"b","lanes":[{"lane":"decode","windows":1,"kernels":[` + kernels + `]}]}`
	}
	kernel := func(name, per string) string {
		return `{"name":"` + name + `","launches":2,"time_ns":{"n":1,"mean":2,"m2":0},"per_launch":` + per + `}`
	}
	ok := doc(kernel("a", list(MaxLaunches)) + "," + kernel("b", list(MaxLaneLaunches-MaxLaunches)))
	if p, err := Parse([]byte(ok)); err != nil || len(p.Lanes[0].Kernels[0].PerLaunch) != MaxLaunches {
		t.Fatalf("at the bounds: %v", err)
	}
	for _, c := range []struct{ name, doc, want string }{
		{"a name's", doc(kernel("a", list(MaxLaunches+1))), fmt.Sprintf("more than %d launches of a kernel", MaxLaunches)},
		{"a lane's", doc(kernel("a", list(MaxLaunches)) + "," + kernel("b", list(MaxLaunches)) + "," + kernel("c", list(1))), fmt.Sprintf("more than %d launches kept apart", MaxLaneLaunches)},
		{"twice", doc(`{"name":"a","per_launch":[],"per_launch":[]}`), "a kernel's launches given twice"},
		{"windows", doc(kernel("a", `[{"n":2,"mean":1,"m2":0}]`)), "in 2 windows of 1"},
		{"negative", doc(kernel("a", `[{"n":1,"mean":-1,"m2":0}]`)), "a value of -1"},
		{"spread", doc(kernel("a", `[{"n":1,"mean":1,"m2":-1}]`)), "spread"},
	} {
		if _, err := Parse([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
