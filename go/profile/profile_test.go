package profile

import (
	"math/rand"
	"testing"
	"time"
)

// build gathers windows of one lane whose kernels run at times (ns per
// span), each jittered by up to jitter either way.
func build(times map[string]float64, windows int, jitter float64, seed int64) *Profile {
	r := rand.New(rand.NewSource(seed))
	var b Builder
	for w := 0; w < windows; w++ {
		wl := WindowLane{Model: "NVIDIA H100", Driver: "13.0", Lane: "decode", Spans: 1}
		for name, t := range times {
			t *= 1 + jitter*(2*r.Float64()-1)
			wl.Kernels = append(wl.Kernels, WindowKernel{Name: name, Time: t, Launches: 1})
			wl.Busy += t
		}
		wl.Served = wl.Busy * 1.1
		b.Add(&wl)
	}
	return b.Profile("b", "", testTime)
}

func TestCompareNamesTheKernelThatGrew(t *testing.T) {
	base := map[string]float64{"gemm": 400e3, "attn": 200e3, "norm": 20e3, "act": 10e3}
	slow := map[string]float64{"gemm": 400e3, "attn": 240e3, "norm": 20e3, "act": 10e3}
	d := Compare(build(base, 8, 0.03, 1), build(slow, 5, 0.03, 2), CompareOptions{})
	if len(d.Lanes) != 1 || len(d.Lanes[0].Kernels) != 1 || d.Lanes[0].Kernels[0].Name != "attn" || d.Lanes[0].Kernels[0].Change != Grew {
		t.Fatalf("want attn alone grown: %+v", d)
	}
	if same := Compare(build(base, 8, 0.03, 1), build(base, 5, 0.03, 3), CompareOptions{}); same.Changed() {
		t.Fatalf("the same build named something: %+v", same)
	}
}

var testTime = time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
