package costmodel

import (
	"math"
	"math/rand"
	"strconv"
	"testing"
)

// batch draws n requests: prefill with probability pre (a prompt of up to
// 2,048 tokens), else one decoded token over a context of up to ctx.
func batch(rng *rand.Rand, n int, pre float64, ctx int) []Request {
	out := make([]Request, n)
	for i := range out {
		if rng.Float64() < pre {
			t := uint32(16 + rng.Intn(2032))
			out[i] = NewRequest(t, t)
		} else {
			out[i] = NewRequest(1, uint32(1+rng.Intn(ctx)))
		}
	}
	return out
}

// cost is a step's cost: a, and per request b a token, c a context token
// and d a pair.
func cost(a, b, c, d float64, reqs []Request) float64 {
	y := a
	for _, r := range reqs {
		y += b*r[0] + c*r[1] + d*r[2]
	}
	return y
}

func TestPairs(t *testing.T) {
	for _, tc := range []struct {
		tokens, ctx uint32
		want        float64
	}{
		{1, 1, 1},       // a first token attends to itself
		{1, 100, 100},   // a decoded token attends to its whole context
		{4, 4, 10},      // 1+2+3+4
		{2, 10, 8 + 11}, // 9 and 10 for the two new tokens
		{3, 1, 6},       // a context shorter than the tokens counts as the tokens
	} {
		if got := Pairs(tc.tokens, tc.ctx); got != tc.want {
			t.Errorf("Pairs(%d, %d) = %v, want %v", tc.tokens, tc.ctx, got, tc.want)
		}
	}
	if r := NewRequest(3, 1); r != (Request{3, 3, 6}) {
		t.Errorf("NewRequest(3, 1) = %v", r)
	}
}

func TestFitRecoversCosts(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	// 400 us a step, 20 ns a token, 5 ns a context token read, 0.05 ns a pair.
	const a, b, c, d = 400e3, 20, 5, 0.05
	var f Fit
	for i := 0; i < 4000; i++ {
		reqs := batch(rng, 4+rng.Intn(28), 0.1, 32768)
		f.Observe(reqs, cost(a, b, c, d, reqs)*(1+0.02*rng.NormFloat64()))
	}
	m := f.Model()
	if m.Status != OK {
		t.Fatalf("status %v, want ok (model %+v)", m.Status, m)
	}
	for _, x := range []struct {
		name      string
		got, want float64
	}{{"A", m.A, a}, {"B", m.Coef[0], b}, {"C", m.Coef[1], c}, {"D", m.Coef[2], d}} {
		if math.Abs(x.got-x.want) > 0.1*x.want {
			t.Errorf("%s = %v, want %v within 10%% (model %+v)", x.name, x.got, x.want, m)
		}
	}
	if m.Residual > 0.05 {
		t.Errorf("residual %v for 2%% noise", m.Residual)
	}
}

func TestFitNeverNegative(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	var f Fit
	// No fixed cost and no context cost at all, and noise that would pull
	// them below 0.
	for i := 0; i < 2000; i++ {
		reqs := batch(rng, 1+rng.Intn(16), 0.3, 8192)
		f.Observe(reqs, cost(0, 50, 0, 0.01, reqs)*(1+0.05*rng.NormFloat64()))
	}
	m := f.Model()
	if m.A < 0 || m.Coef[0] < 0 || m.Coef[1] < 0 || m.Coef[2] < 0 {
		t.Fatalf("negative coefficient: %+v", m)
	}
	if m.Status != OK {
		t.Fatalf("status %v: %+v", m.Status, m)
	}
}

func TestFitStatuses(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	alike := []Request{NewRequest(1, 4000), NewRequest(1, 200)}
	t.Run("fitting", func(t *testing.T) {
		var f Fit
		for i := 0; i < MinSteps-1; i++ {
			f.Observe(alike, 1e6)
		}
		if s := f.Model().Status; s != Fitting {
			t.Fatalf("status %v after %d steps, want fitting", s, MinSteps-1)
		}
	})
	t.Run("all batches alike", func(t *testing.T) {
		// Requests differ within the batch (contexts 4,000 and 200), but
		// every step is the same batch: nothing can price a context.
		var f Fit
		for i := 0; i < 500; i++ {
			f.Observe(alike, 1e6*(1+0.01*rng.NormFloat64()))
		}
		if s := f.Model().Status; s != Undetermined {
			t.Fatalf("status %v, want undetermined", s)
		}
	})
	t.Run("alike requests need no pricing", func(t *testing.T) {
		// Every request the same: an equal split is right whatever the fit.
		same := []Request{NewRequest(1, 500), NewRequest(1, 500)}
		var f Fit
		for i := 0; i < 500; i++ {
			f.Observe(same, 1e6*(1+0.01*rng.NormFloat64()))
		}
		if s := f.Model().Status; s != OK {
			t.Fatalf("status %v, want ok", s)
		}
	})
	t.Run("decode alone", func(t *testing.T) {
		// Decodes only: a context token and a pair move as one, within
		// batches too, so the split does not depend on which pays: ok.
		var f Fit
		for i := 0; i < 1000; i++ {
			reqs := batch(rng, 8, 0, 8192)
			f.Observe(reqs, cost(2e5, 20, 4, 0, reqs)*(1+0.01*rng.NormFloat64()))
		}
		if s := f.Model(); s.Status != OK {
			t.Fatalf("status %v, want ok (%+v)", s.Status, s)
		}
	})
	t.Run("a token budget", func(t *testing.T) {
		// Every step processes 512 tokens among requests of varying sizes:
		// the step's fixed cost and the cost of a token cannot be told apart.
		var f Fit
		for i := 0; i < 500; i++ {
			k := uint32(1 + rng.Intn(511))
			reqs := []Request{NewRequest(k, k), NewRequest(512-k, 512-k)}
			f.Observe(reqs, cost(1e5, 100, 0, 0.01, reqs))
		}
		if s := f.Model().Status; s != Undetermined {
			t.Fatalf("status %v, want undetermined", s)
		}
	})
	t.Run("unexplained", func(t *testing.T) {
		var f Fit
		for i := 0; i < 500; i++ {
			reqs := batch(rng, 8, 0.2, 4096)
			f.Observe(reqs, 1e6*math.Exp(rng.NormFloat64())) // unrelated to the batch
		}
		if s := f.Model().Status; s != Unexplained {
			t.Fatalf("status %v, want unexplained (%+v)", s, f.Model())
		}
	})
}

func TestFitForgets(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	var f Fit
	for i := 0; i < 3000; i++ {
		reqs := batch(rng, 8, 0.1, 8192)
		f.Observe(reqs, cost(1e5, 10, 2, 0.02, reqs))
	}
	for i := 0; i < 12*HalfLife; i++ {
		reqs := batch(rng, 8, 0.1, 8192)
		f.Observe(reqs, cost(2e5, 10, 4, 0.02, reqs))
	}
	if m := f.Model(); math.Abs(m.Coef[1]-4) > 0.4 || math.Abs(m.A-2e5) > 2e4 {
		t.Fatalf("after the lane changed the model is %+v, want A 2e5, C 4", m)
	}
}

func TestSplitConserves(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for trial := 0; trial < 2000; trial++ {
		n := 1 + rng.Intn(64)
		w := make([]float64, n)
		for i := range w {
			switch rng.Intn(4) {
			case 0:
				w[i] = 0
			case 1:
				w[i] = -rng.Float64() // counts as 0
			default:
				w[i] = rng.ExpFloat64() * math.Pow(10, float64(rng.Intn(12)))
			}
		}
		total := rng.Int63n(1 << 40)
		parts := make([]int64, n)
		Split(total, w, parts)
		var wsum float64
		var got int64
		for i, p := range parts {
			if p < 0 {
				t.Fatalf("negative part %d", p)
			}
			got += p
			wsum += max(w[i], 0)
		}
		if got != total {
			t.Fatalf("parts add to %d, want %d", got, total)
		}
		for i, p := range parts {
			want := float64(total) / float64(n)
			if wsum > 0 {
				want = float64(total) * max(w[i], 0) / wsum
			}
			// Each part is within a nanosecond of its share, but for
			// float64's rounding of very large totals.
			if math.Abs(float64(p)-want) > 1+want*1e-12+float64(total)*1e-15 {
				t.Fatalf("part %d = %d, share %v", i, p, want)
			}
		}
	}
}

func TestWeights(t *testing.T) {
	reqs := []Request{NewRequest(1, 1000), NewRequest(1, 100), NewRequest(100, 100)}
	w := make([]float64, len(reqs))
	m := Model{Status: OK, A: 300, Coef: [Features]float64{2, 0.5, 0.25}}
	if !Weights(m, reqs, w) {
		t.Fatal("an ok model gave no weights")
	}
	if want := 100 + 2 + 500 + 250.0; w[0] != want {
		t.Fatalf("w[0] = %v, want %v", w[0], want)
	}
	m.Status = Undetermined
	if Weights(m, reqs, w) {
		t.Fatal("an undetermined model claimed its weights")
	}
	if w[0] != 1 || w[2] != 100 {
		t.Fatalf("fallback weights %v, want the tokens", w)
	}
	if Weights(m, []Request{{}, {}}, w[:2]); w[0] != 1 || w[1] != 1 {
		t.Fatalf("weights of requests with nothing: %v, want even", w[:2])
	}
}

func TestEigen(t *testing.T) {
	m := [Features][Features]float64{{4, 1, 0}, {1, 3, 1}, {0, 1, 2}}
	vals, vecs := eigen(m)
	for i := range vals {
		// m v = lambda v for each column.
		for r := 0; r < Features; r++ {
			var mv float64
			for c := 0; c < Features; c++ {
				mv += m[r][c] * vecs[c][i]
			}
			if math.Abs(mv-vals[i]*vecs[r][i]) > 1e-9 {
				t.Fatalf("eigenpair %d: %v %v", i, vals, vecs)
			}
		}
	}
}

func TestAllocations(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	reqs := batch(rng, 64, 0.1, 8192)
	w := make([]float64, len(reqs))
	parts := make([]int64, len(reqs))
	var f Fit
	if n := testing.AllocsPerRun(100, func() {
		f.Observe(reqs, 1e6)
		m := f.Model()
		Weights(m, reqs, w)
		Split(1_000_000, w, parts)
	}); n != 0 {
		t.Fatalf("%v allocations a step", n)
	}
}

func BenchmarkStep(b *testing.B) {
	rng := rand.New(rand.NewSource(7))
	for _, n := range []int{8, 256} {
		reqs := batch(rng, n, 0.1, 8192)
		w := make([]float64, n)
		parts := make([]int64, n)
		b.Run("requests="+strconv.Itoa(n), func(b *testing.B) {
			var f Fit
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				f.Observe(reqs, 1e6)
				Weights(f.Model(), reqs, w)
				Split(1_000_000, w, parts)
			}
		})
	}
}
