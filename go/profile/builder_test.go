package profile

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBuilderAbsentKernelIsZero: a kernel a window did not run counts 0
// for that window, before it first ran and after it last ran: its Stat is
// over all the lane's windows; its launches are per window that ran it.
func TestBuilderAbsentKernelIsZero(t *testing.T) {
	windows := [][]WindowKernel{
		{{"a", 10e3, 2, nil}, {"b", 40e3, 1, nil}},
		{{"a", 12e3, 2, nil}},
		{{"a", 11e3, 4, nil}, {"b", 44e3, 1, nil}, {"c", 90e3, 3, nil}},
		{},
		{{"a", 9e3, 2, nil}},
	}
	var b Builder
	for _, ks := range windows {
		b.Add(&WindowLane{Model: "m", Lane: "decode", Spans: 4, Served: 200e3, Busy: 100e3, Kernels: ks})
	}
	l := b.Profile("x", "", testTime).Lanes[0]
	if l.Windows != 5 || l.Spans != 20 || l.Busy.N != 5 || l.Time.N != 5 {
		t.Fatalf("lane %+v", l)
	}
	want := map[string]struct {
		times    []float64
		launches float64
	}{
		"a": {[]float64{10e3, 12e3, 11e3, 0, 9e3}, 2.5},
		"b": {[]float64{40e3, 0, 44e3, 0, 0}, 1},
		"c": {[]float64{0, 0, 90e3, 0, 0}, 3},
	}
	if len(l.Kernels) != 3 || l.Kernels[0].Name != "c" || l.Kernels[1].Name != "b" || l.Kernels[2].Name != "a" {
		t.Fatalf("kernels %+v, want c, b, a: the heaviest first", l.Kernels)
	}
	for _, k := range l.Kernels {
		w := want[k.Name]
		mean, m2 := 0.0, 0.0
		for _, x := range w.times {
			mean += x / 5
		}
		for _, x := range w.times {
			m2 += (x - mean) * (x - mean)
		}
		if k.Time.N != l.Windows || math.Abs(k.Time.Mean-mean) > 1e-6 || math.Abs(k.Time.M2-m2) > 1e-3 || k.Launches != w.launches {
			t.Errorf("%s: %+v launches %v; want n 5, mean %v, m2 %v, launches %v", k.Name, k.Time, k.Launches, mean, m2, w.launches)
		}
	}
}

// TestBuilderNameTwiceInAWindow: two entries of one name in a window (two
// kernel ids of one name) are one value, their sum, not two windows.
func TestBuilderNameTwiceInAWindow(t *testing.T) {
	var b Builder
	for i := 0; i < 3; i++ {
		b.Add(&WindowLane{Lane: "decode", Spans: 1, Busy: 30e3, Kernels: []WindowKernel{{"gemm", 10e3, 1, nil}, {"gemm", 20e3, 2, nil}}})
	}
	p := b.Profile("x", "", testTime)
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	k := p.Lanes[0].Kernels[0]
	if k.Time.N != 3 || k.Time.Mean != 30e3 || k.Launches != 3 {
		t.Errorf("%+v", k)
	}
}

// TestBuilderBoundedMemory: a lane whose kernel names change from window
// to window, or one window of 100,000 names, keeps at most keptKernels
// names, and none of the room the many took.
func TestBuilderBoundedMemory(t *testing.T) {
	var b Builder
	heavy := []WindowKernel{{"gemm", 500e3, 1, nil}, {"attn", 300e3, 1, nil}}
	for w := 0; w < 400; w++ {
		ks := append([]WindowKernel(nil), heavy...)
		for i := 0; i < 250; i++ {
			ks = append(ks, WindowKernel{fmt.Sprintf("k%d-%d", w, i), float64(1 + i), 1, nil})
		}
		b.Add(&WindowLane{Model: "m", Lane: "churn", Spans: 1, Served: 1e6, Busy: 900e3, Kernels: ks})
		if n := len(b.lanes[0].kernels); n > keptKernels {
			t.Fatalf("window %d: %d names kept, at most %d", w, n, keptKernels)
		}
	}
	p := b.Profile("x", "", testTime)
	l := p.Lanes[0]
	if len(l.Kernels) != MaxKernels || l.Kernels[0].Name != "gemm" || l.Kernels[1].Name != "attn" || l.Kernels[0].Time.N != 400 || l.KernelsCut == 0 || l.CutBelow <= 0 {
		t.Errorf("%d kernels, first %q %q, cut %d below %v", len(l.Kernels), l.Kernels[0].Name, l.Kernels[1].Name, l.KernelsCut, l.CutBelow)
	}
	if err := p.Check(); err != nil {
		t.Error(err)
	}

	// Lanes that each had one window of 100,000 names hold little after.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var big Builder
	names := make([]WindowKernel, 100_000)
	for i := range names {
		names[i] = WindowKernel{fmt.Sprintf("kernel_%06d", i), float64(i), 1, nil}
	}
	for lane := 0; lane < 8; lane++ {
		big.Add(&WindowLane{Lane: fmt.Sprint("lane", lane), Spans: 1, Busy: 1, Kernels: names})
		if n := len(big.lanes[lane].kernels); n > keptKernels {
			t.Fatalf("one window of 100,000 names: %d kept", n)
		}
	}
	names = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 4<<20 {
		t.Errorf("8 lanes of %d names each hold %d KiB", keptKernels, grown>>10)
	}
	runtime.KeepAlive(&big)
}

// TestBuilderNames: names a profile cannot hold (control characters, over
// MaxName bytes, not UTF-8, empty) are written as ones it can, and the
// profile reads back as it was written.
func TestBuilderNames(t *testing.T) {
	long := strings.Repeat("x", MaxName-1) + "é" + "tail" // é straddles the cut
	var b Builder
	for w := 0; w < 3; w++ {
		for _, lane := range []string{"dec\node", long + "1", long + "2", "", "bad\xffutf8"} {
			b.Add(&WindowLane{Model: "NVIDIA\tH100", Driver: "13.0\x00", Lane: lane, Spans: 1, Served: 2e3, Busy: 1e3, Kernels: []WindowKernel{
				{"gemm\x1b[31m", 100, 1, nil}, {long + "a", 90, 1, nil}, {long + "b", 80, 1, nil}, {"", 70, 1, nil}, {"\xc3\x28", 60, 1, nil}, {"ok<T>", 50, 1, nil},
			}})
		}
	}
	p := b.Profile("build\n1", "host\x7f", testTime)
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	readable := func(s string) bool {
		return s != "" && len(s) <= MaxName && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
	}
	var lanes, kernels []string
	for _, l := range p.Lanes {
		lanes = append(lanes, l.Lane)
		if !readable(l.Lane) || !readable(l.Model) || !readable(l.Driver) {
			t.Errorf("lane %q model %q driver %q", l.Lane, l.Model, l.Driver)
		}
		if l.Model != "NVIDIA?H100" || l.Driver != "13.0?" {
			t.Errorf("model %q driver %q", l.Model, l.Driver)
		}
		if l.Lane == "(unnamed)" {
			for _, k := range l.Kernels {
				kernels = append(kernels, k.Name)
				if !readable(k.Name) {
					t.Errorf("kernel %q", k.Name)
				}
			}
		}
	}
	// The two long lanes are one once cut; so are the two long kernels.
	wantLanes := []string{"(unnamed)", "bad\ufffdutf8", "dec?ode", strings.Repeat("x", MaxName-1)}
	if fmt.Sprint(lanes) != fmt.Sprint(wantLanes) {
		t.Errorf("lanes %.100q, want %.100q", lanes, wantLanes)
	}
	wantKernels := []string{"gemm?[31m", strings.Repeat("x", MaxName-1), "(unnamed)", "\ufffd(", "ok<T>"}
	if fmt.Sprint(kernels) != fmt.Sprint(wantKernels) {
		t.Errorf("kernels %.100q, want %.100q", kernels, wantKernels)
	}
	if p.Build != "build?1" || p.Host != "host?" {
		t.Errorf("build %q host %q", p.Build, p.Host)
	}
	path := filepath.Join(t.TempDir(), "p.json")
	if err := Write(path, p); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := Marshal(p)
	b2, _ := Marshal(back)
	if !bytes.Equal(b1, b2) {
		t.Errorf("read back differs:\n%s\nwas\n%s", b2, b1)
	}
}

// TestBuilderValues: a window with a value that is no time is left out;
// a negative one (rounding) counts as 0; a long run's spread still makes a
// profile that is written.
func TestBuilderValues(t *testing.T) {
	var b Builder
	add := func(served, busy, kernel float64) {
		b.Add(&WindowLane{Lane: "l", Spans: 1, Served: served, Busy: busy, Idle: Causes{Host: served - busy},
			Kernels: []WindowKernel{{"k", kernel, 1, nil}}})
	}
	add(2e3, 1e3, 1e3)
	add(math.NaN(), 1e3, 1e3)
	add(2e3, math.Inf(1), 1e3)
	add(2e3, 1e3, 2e15)
	add(2e3, 1e3, math.Inf(-1))
	add(2e3, -1e-9, -1e-9)
	l := b.Profile("x", "", testTime).Lanes[0]
	if l.Windows != 2 || l.Busy.Mean != 500 || l.Kernels[0].Time.Mean != 500 || l.Kernels[0].Time.N != 2 {
		t.Errorf("lane %+v", l)
	}
	if b.Windows("", "l") != 2 || b.MinWindows() != 2 || b.Windows("", "other") != 0 {
		t.Errorf("Windows %d, MinWindows %d", b.Windows("", "l"), b.MinWindows())
	}
	if err := b.Profile("x", "", testTime).Check(); err != nil {
		t.Error(err)
	}

	// A day of windows every 10 s of a lane whose step swings by 20 ms and
	// a kernel that runs 5 ms in every other window.
	var long Builder
	for w := 0; w < 8640; w++ {
		k := 0.0
		if w%2 == 0 {
			k = 5e6
		}
		long.Add(&WindowLane{Lane: "l", Spans: 1, Served: 40e6 + float64(w%3)*10e6, Busy: 30e6, Kernels: []WindowKernel{{"k", k, 1, nil}, {"j", 1e6, 1, nil}}})
	}
	p := long.Profile("x", "", testTime)
	if p.Lanes[0].Time.M2 < 1e17 {
		t.Fatalf("m2 %v: the case is not made", p.Lanes[0].Time.M2)
	}
	if err := Write(filepath.Join(t.TempDir(), "p.json"), p); err != nil {
		t.Error(err)
	}
}

// TestBuilderLanes: a model with two drivers is written as the one with
// more windows; past MaxLanes lanes are left out; lanes come sorted.
func TestBuilderLanes(t *testing.T) {
	var b Builder
	for w := 0; w < 5; w++ {
		b.Add(&WindowLane{Model: "H100", Driver: "12.8", Lane: "decode", Spans: 1, Busy: 1})
		if w < 3 {
			b.Add(&WindowLane{Model: "H100", Driver: "13.0", Lane: "decode", Spans: 1, Busy: 1})
		}
	}
	b.Add(&WindowLane{Model: "H100", Lane: "empty", Spans: 0, Busy: 1}) // no spans: no window
	p := b.Profile("x", "", testTime)
	if len(p.Lanes) != 1 || p.Lanes[0].Driver != "12.8" || p.Lanes[0].Windows != 5 || b.Windows("H100", "decode") != 8 || b.MinWindows() != 3 {
		t.Errorf("lanes %+v, Windows %d, MinWindows %d", p.Lanes, b.Windows("H100", "decode"), b.MinWindows())
	}
	var many Builder
	for i := 0; i < MaxLanes+44; i++ {
		many.Add(&WindowLane{Model: "H100", Lane: fmt.Sprintf("lane%03d", MaxLanes+44-i), Spans: 1, Busy: 1})
	}
	p = many.Profile("x", "", testTime)
	if err := p.Check(); err != nil || len(p.Lanes) != MaxLanes || p.Lanes[0].Lane > p.Lanes[1].Lane {
		t.Errorf("%d lanes, first %q %q: %v", len(p.Lanes), p.Lanes[0].Lane, p.Lanes[1].Lane, err)
	}
	var none Builder
	if none.MinWindows() != 0 || len(none.Profile("x", "", testTime).Lanes) != 0 {
		t.Error("an empty builder")
	}
}

// BenchmarkBuilderAdd is a window's cost to the harvest that analyses it,
// per lane: a decode lane of 40 kernel names, one of keptKernels names
// with a new one each window (eager prefill of varying shapes), which cuts
// the list every window, and a decode lane of 4 names launched 58 times a
// step each, their launches kept apart.
func BenchmarkBuilderAdd(b *testing.B) {
	for _, c := range []struct {
		name     string
		names    int
		fresh    bool
		launches int // of each name, kept apart
	}{{"40-names", 40, false, 0}, {"churn", keptKernels, true, 0}, {"4-names-232-launches", 4, false, 58}} {
		b.Run(c.name, func(b *testing.B) {
			var bl Builder
			wl := WindowLane{Model: "NVIDIA H100", Driver: "13.0", Lane: "decode", Spans: 1, Served: 1e6, Busy: 9e5}
			for i := 0; i < c.names; i++ {
				k := WindowKernel{Name: fmt.Sprintf("kernel_%d", i), Time: float64(1000 + i), Launches: float64(max(c.launches, 1))}
				for n := 0; n < c.launches; n++ {
					k.PerLaunch = append(k.PerLaunch, float64(1000+n))
				}
				wl.Kernels = append(wl.Kernels, k)
			}
			fresh := make([]string, 1024)
			for i := range fresh {
				fresh[i] = fmt.Sprintf("shape_%d", i)
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if c.fresh {
					wl.Kernels[0].Name = fresh[i%len(fresh)]
				}
				bl.Add(&wl)
			}
		})
	}
}
