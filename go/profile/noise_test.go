package profile

import (
	"math/rand"
	"slices"
	"testing"
)

// noiseShapes are window-to-window noise of a kernel's time, as a factor
// of its mean: what the comparison must not call a change.
var noiseShapes = map[string]func(r *rand.Rand) float64{
	"normal 3%":   func(r *rand.Rand) float64 { return 1 + 0.03*r.NormFloat64() },
	"uniform 5%":  func(r *rand.Rand) float64 { return 1 + 0.05*(2*r.Float64()-1) },
	"bimodal 6%":  func(r *rand.Rand) float64 { return 1 + 0.06*float64(2*r.Intn(2)-1) },
	"hiccup 1/10": func(r *rand.Rand) float64 { return 1 + 0.01*r.NormFloat64() + 0.3*float64(r.Intn(10)/9) },
}

// noisyBuild is a profile of windows windows of a decode lane of kernels,
// each kernel's time in each window its mean times noise.
func noisyBuild(name string, kernels map[string]float64, windows int, noise func(*rand.Rand) float64, r *rand.Rand) *Profile {
	names := make([]string, 0, len(kernels))
	for k := range kernels {
		names = append(names, k)
	}
	slices.Sort(names)
	var b Builder
	for w := 0; w < windows; w++ {
		wl := WindowLane{Model: "NVIDIA H100", Driver: "13.0", Lane: "decode", Spans: 1}
		for _, k := range names {
			t := kernels[k] * noise(r)
			wl.Kernels = append(wl.Kernels, WindowKernel{Name: k, Time: t, Launches: 1})
			wl.Busy += t
		}
		wl.Served = wl.Busy * 1.1
		b.Add(&wl)
	}
	return b.Profile(name, "", testTime)
}

// Unchanged builds under each noise shape, at the windows a comparison
// first comes with: WORSE in under 0.5% of 1,500 pairs.
func TestUnchangedBuildsUnderNoise(t *testing.T) {
	pairs := 1500
	if testing.Short() {
		pairs = 300
	}
	kernels := manyKernels(32)
	for name, noise := range noiseShapes {
		r := rand.New(rand.NewSource(42))
		worse := 0
		for i := 0; i < pairs; i++ {
			a := noisyBuild("a", kernels, MinWindows, noise, r)
			b := noisyBuild("b", kernels, MinWindows, noise, r)
			if d := Compare(a, b, CompareOptions{}); d.Worse() {
				worse++
			}
		}
		rate := float64(worse) / float64(pairs)
		t.Logf("%s: WORSE in %d of %d unchanged pairs (%.2f%%)", name, worse, pairs, 100*rate)
		if rate >= 0.005 {
			t.Errorf("%s: WORSE in %.2f%% of unchanged pairs, want under 0.5%%", name, 100*rate)
		}
	}
	// And a real change under the same noise is still named.
	for name, noise := range noiseShapes {
		r := rand.New(rand.NewSource(7))
		named := 0
		for i := 0; i < 100; i++ {
			a := noisyBuild("a", kernels, MinWindows, noise, r)
			b := noisyBuild("b", scaled(kernels, "k11", 1.5), MinWindows, noise, r)
			d := Compare(a, b, CompareOptions{})
			for _, l := range d.Lanes {
				for _, k := range l.Kernels {
					if k.Name == "k11" && k.Change == Grew {
						named++
					}
				}
			}
		}
		t.Logf("%s: a kernel 50%% slower named in %d of 100", name, named)
		// A hiccup widens its kernel's spread: named when none fell in its
		// windows, as Welch's test must.
		if name != "hiccup 1/10" && named < 90 {
			t.Errorf("%s: a kernel 50%% slower named in %d of 100 pairs", name, named)
		}
	}
}
