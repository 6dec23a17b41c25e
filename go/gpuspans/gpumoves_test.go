package gpuspans

import (
	"math/rand"
	"slices"
	"testing"
	"time"
)

// Per-launch averages stay bounded over 10,000 windows whose launches
// change (1,000 a window, a tenth of them new), keep the heaviest, and
// still see one of them grow.
func TestLaunchAveragesBounded(t *testing.T) {
	var a launchAverages
	now := time.Unix(1_700_000_000, 0).UnixNano()
	ls := map[launchKey]int64{}
	const every = 10 * time.Second
	heavy := launchKey{name: 1, n: 1}
	var sizes []int
	windows := 10_000
	if testing.Short() {
		windows = 2_000
	}
	for w := 0; w < windows; w++ {
		clear(ls)
		for i := 0; i < 1000; i++ {
			// Names drift: each window replaces a tenth of its launches.
			ls[launchKey{name: int32(2 + (w/10*100+i)%50_000), n: int32(1 + i%7)}] = 1000
		}
		ls[heavy] = 50_000
		if w >= windows-100 {
			ls[heavy] = 100_000 // grows: the moved launch
		}
		a.update(ls, 1, now, float64(every), w == 0)
		now += int64(every)
		if len(a.m) > GPUTimeLaunchesPerLane {
			t.Fatalf("window %d: %d launches kept, want at most %d", w, len(a.m), GPUTimeLaunchesPerLane)
		}
		if w%1000 == 999 {
			sizes = append(sizes, len(a.m))
		}
	}
	for _, n := range sizes[1:] {
		if n != sizes[0] {
			t.Errorf("launches kept every 1,000 windows: %v, want flat", sizes)
			break
		}
	}
	if cap(a.evict) > 2*(GPUTimeLaunchesPerLane+1000+1) {
		t.Errorf("eviction scratch of %d, want it bounded by the launches kept plus a window's", cap(a.evict))
	}
	m, ok := a.m[heavy]
	if !ok || m.recent < 1.5*m.base || m.recent < 95_000 {
		t.Errorf("the heavy launch: %+v (kept %v), want it kept, grown from 50 to 100 us", m, ok)
	}
	// A launch not run for GPUTimeLaunchForget is forgotten.
	only := map[launchKey]int64{heavy: 100_000}
	for end := now + int64(GPUTimeLaunchForget); now <= end; now += int64(every) {
		a.update(only, 1, now, float64(every), false)
	}
	if len(a.m) != 1 {
		t.Errorf("%d launches kept after %v of one launch, want it alone", len(a.m), GPUTimeLaunchForget)
	}
}

// selectLightest leaves the n lightest first, ties broken by key.
func TestSelectLightest(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for trial := 0; trial < 200; trial++ {
		e := make([]launchWeight, 1+r.Intn(300))
		for i := range e {
			e[i] = launchWeight{w: float64(r.Intn(20)), k: launchKey{name: int32(i), n: int32(r.Intn(3))}}
		}
		want := slices.Clone(e)
		slices.SortFunc(want, func(a, b launchWeight) int {
			if lighter(a, b) {
				return -1
			}
			if lighter(b, a) {
				return 1
			}
			return 0
		})
		n := r.Intn(len(e) + 1)
		selectLightest(e, n)
		got := slices.Clone(e[:n])
		slices.SortFunc(got, func(a, b launchWeight) int {
			if lighter(a, b) {
				return -1
			}
			return 1
		})
		if !slices.Equal(got, want[:n]) {
			t.Fatalf("trial %d: the %d lightest of %d: %v, want %v", trial, n, len(e), got, want[:n])
		}
	}
}
