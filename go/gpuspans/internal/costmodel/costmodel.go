// Package costmodel fits what a serve lane's step costs against the
// composition of the batch it served, online, and splits one step's
// measured time among the step's requests so that the parts add up to the
// step exactly. It is pure arithmetic over plain values: go/gpuspans feeds
// it the lane spans it lands and the batches engines declare.
//
// The model (docs/design.md, "Whose GPU time") is linear in what each
// request brings to a step, its features:
//
//	step time = A + sum over requests of (B*tokens + C*context + D*pairs)
//
// A is the step's fixed cost (weights read, launches), shared equally by
// its requests; B the cost of a token processed (new or decoded); C the
// cost of a context token read (a decoded token reads its whole KV cache:
// memory-bound attention); D the cost of an attention pair (a token times
// the context it attends to: compute-bound attention, a long prompt's).
// Fit holds exponentially weighted moments of the lane's steps, so that
// Model is the least-squares fit over the recent ones with no coefficient
// negative, and it says when the steps cannot price apart what tells the
// batch's requests apart.
package costmodel

import "math"

// Features is the number of per-request features: tokens, context, pairs.
const Features = 3

// Request is what one request brought to one step: its features.
type Request [Features]float64

// NewRequest returns the features of a request that processed tokens
// tokens at the end of a context of ctx tokens (these included; less
// counts as tokens).
func NewRequest(tokens, ctx uint32) Request {
	c := max(ctx, tokens)
	return Request{float64(tokens), float64(c), Pairs(tokens, c)}
}

// Pairs returns the attention pairs of tokens new tokens at the end of a
// context of ctx tokens (these included) under causal attention: token j
// of them attends to the ctx-tokens+j tokens before it and itself.
func Pairs(tokens, ctx uint32) float64 {
	t, c := float64(tokens), float64(max(ctx, tokens))
	return t*(c-t) + t*(t+1)/2
}

// Status says whether a lane's model can split its steps.
type Status uint8

// Statuses, in the order a lane meets them.
const (
	// Fitting: fewer than MinSteps steps observed.
	Fitting Status = iota
	// OK: the model explains the lane's steps and prices apart whatever
	// tells a batch's requests apart.
	OK
	// Undetermined: requests within a batch differ along a combination
	// of features whose cost the steps cannot separate from the rest,
	// because across steps it never varied on its own: all batches alike,
	// say, or every step the same number of tokens.
	Undetermined
	// Unexplained: the batches' composition does not explain the lane's
	// step times (the fit's residual is over MaxResidual of the mean).
	Unexplained
)

// String names the status as a label value.
func (s Status) String() string {
	switch s {
	case Fitting:
		return "fitting"
	case OK:
		return "ok"
	case Undetermined:
		return "undetermined"
	case Unexplained:
		return "unexplained"
	}
	return "unknown"
}

// Thresholds of the fit, stated in docs/design.md.
const (
	// MinSteps is how many steps a lane's fit observes before it splits.
	MinSteps = 32
	// HalfLife is how many steps the moments' weights take to halve.
	HalfLife = 1024
	// MinVariation is the relative standard deviation across steps below
	// which a combination of the batches' totals counts as constant.
	MinVariation = 0.02
	// MinSpread is the relative within-batch variance along such a
	// combination above which the batch's requests differ in it.
	MinSpread = 1e-3
	// MaxResidual is the fit's root-mean-square residual, over the mean
	// step time, above which the composition does not explain the lane.
	MaxResidual = 0.25
)

// decay is the weight a step's moments keep per later step.
var decay = math.Exp2(-1.0 / HalfLife)

// k is the moments' dimension: the features' totals and the step time.
const k = Features + 1

// Fit is one lane's exponentially weighted moments. The zero Fit is empty.
// Not safe for concurrent use.
type Fit struct {
	steps uint64
	w     float64    // total weight
	mean  [k]float64 // the features' totals and the time, per step
	s     [k][k]float64
	// Within batches: the mean per request of each feature, and the
	// relative covariance of the requests' features about their batch's
	// mean (Spread's).
	perReq [Features]float64
	within [Features][Features]float64
}

// Model is a fitted lane model.
type Model struct {
	Status Status
	A      float64           // ns per step
	Coef   [Features]float64 // ns per token, per context token, per pair
	Steps  uint64            // steps observed
	// Residual is the fit's root-mean-square residual over the mean step
	// time.
	Residual float64
	// MeanTime is the mean step time, ns.
	MeanTime float64
}

// Observe adds a step that served reqs in ns nanoseconds. A step with no
// requests is not observed.
func (f *Fit) Observe(reqs []Request, ns float64) {
	n := float64(len(reqs))
	if n == 0 {
		return
	}
	var tot Request
	for _, r := range reqs {
		for j := range tot {
			tot[j] += r[j]
		}
	}
	f.steps++
	f.w = f.w*decay + 1
	x := [k]float64{tot[0], tot[1], tot[2], ns}
	var old [k]float64
	for i := range x {
		old[i] = x[i] - f.mean[i]
		f.mean[i] += old[i] / f.w
	}
	for i := range x {
		for j := range x {
			f.s[i][j] = f.s[i][j]*decay + old[i]*(x[j]-f.mean[j])
		}
	}
	// Within the batch: deviations from its mean, relative to the mean
	// request's features, as a per-request covariance.
	for j := range tot {
		f.perReq[j] += (tot[j]/n - f.perReq[j]) / f.w
	}
	var cov [Features][Features]float64
	for _, r := range reqs {
		for a := range tot {
			da := r[a] - tot[a]/n
			for b := range tot {
				cov[a][b] += da * (r[b] - tot[b]/n)
			}
		}
	}
	for a := range tot {
		for b := range tot {
			if s := f.perReq[a] * f.perReq[b]; s > 0 {
				f.within[a][b] += (cov[a][b]/(n*s) - f.within[a][b]) / f.w
			}
		}
	}
}

// Steps returns the steps observed.
func (f *Fit) Steps() uint64 { return f.steps }

// Model returns the least-squares model over the moments, no coefficient
// below 0, and its status.
func (f *Fit) Model() Model {
	m := Model{Steps: f.steps, MeanTime: f.mean[Features]}
	if f.steps == 0 {
		return m
	}
	best, bestErr := [k]float64{}, math.Inf(1)
	for set := 1; set < 1<<k; set++ { // bit 0 the fixed cost, bit j+1 feature j
		c, ok := f.solve(set)
		if !ok {
			continue
		}
		if e := f.sse(c); e < bestErr {
			best, bestErr = c, e
		}
	}
	m.A = best[0]
	copy(m.Coef[:], best[1:])
	if f.mean[Features] > 0 && !math.IsInf(bestErr, 1) {
		m.Residual = math.Sqrt(max(bestErr, 0)/f.w) / f.mean[Features]
	}
	switch {
	case f.steps < MinSteps:
		m.Status = Fitting
	case m.Residual > MaxResidual:
		m.Status = Unexplained
	case !f.determined():
		m.Status = Undetermined
	default:
		m.Status = OK
	}
	return m
}

// determined reports whether the steps price apart whatever differs
// between the requests of a batch: no combination of the features that
// stayed constant across steps (relative to their means: a feature
// constant, or two moving as one) varies within batches.
func (f *Fit) determined() bool {
	var s [Features][Features]float64
	for a := range s {
		for b := range s {
			if d := f.mean[a] * f.mean[b]; d > 0 {
				s[a][b] = f.s[a][b] / f.w / d
			}
		}
	}
	vals, vecs := eigen(s)
	for i, v := range vals {
		// A feature that is 0 throughout has mean 0: its row is 0, an
		// eigenvalue of 0, and no spread either.
		if v >= MinVariation*MinVariation {
			continue
		}
		var spread float64
		for a := range vecs {
			for b := range vecs {
				spread += vecs[a][i] * f.within[a][b] * vecs[b][i]
			}
		}
		if spread > MinSpread {
			return false
		}
	}
	return true
}

// solve fits the coefficients in set (bit 0 the fixed cost, bit j+1
// feature j; the rest 0) by least squares; false when the set cannot be
// fitted or a coefficient comes out negative.
func (f *Fit) solve(set int) ([k]float64, bool) {
	// Raw second moments per unit weight of (1, features) and their
	// products with the time.
	raw := func(a, b int) float64 { // 0 is the constant 1, j+1 feature j
		switch {
		case a == 0 && b == 0:
			return 1
		case a == 0:
			return f.mean[b-1]
		case b == 0:
			return f.mean[a-1]
		}
		return f.s[a-1][b-1]/f.w + f.mean[a-1]*f.mean[b-1]
	}
	var idx [k]int
	n := 0
	for j := 0; j < k; j++ {
		if set&(1<<j) != 0 {
			idx[n] = j
			n++
		}
	}
	// Normal equations, columns scaled to unit diagonal for the pivots.
	var g [k][k + 1]float64
	var scale [k]float64
	for a := 0; a < n; a++ {
		d := raw(idx[a], idx[a])
		if !(d > 0) {
			return [k]float64{}, false
		}
		scale[a] = 1 / math.Sqrt(d)
	}
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			g[a][b] = raw(idx[a], idx[b]) * scale[a] * scale[b]
		}
		ty := f.mean[Features] // with the constant
		if idx[a] > 0 {
			ty = f.s[idx[a]-1][Features]/f.w + f.mean[idx[a]-1]*f.mean[Features]
		}
		g[a][n] = ty * scale[a]
	}
	// Gaussian elimination with partial pivoting.
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(g[r][c]) > math.Abs(g[p][c]) {
				p = r
			}
		}
		if math.Abs(g[p][c]) < 1e-9 {
			return [k]float64{}, false // collinear: a smaller set fits it
		}
		g[c], g[p] = g[p], g[c]
		for r := c + 1; r < n; r++ {
			q := g[r][c] / g[c][c]
			for j := c; j <= n; j++ {
				g[r][j] -= q * g[c][j]
			}
		}
	}
	var out [k]float64
	for c := n - 1; c >= 0; c-- {
		v := g[c][n]
		for j := c + 1; j < n; j++ {
			v -= g[c][j] * out[idx[j]] / scale[j]
		}
		x := v / g[c][c] * scale[c]
		if x < 0 || math.IsNaN(x) {
			return [k]float64{}, false
		}
		out[idx[c]] = x
	}
	return out, true
}

// sse is the weighted sum of squared residuals of (A, coefficients).
func (f *Fit) sse(c [k]float64) float64 {
	var beta [k]float64 // over (features, time): -coefficients, then 1
	for j := 0; j < Features; j++ {
		beta[j] = -c[j+1]
	}
	beta[Features] = 1
	var v, bias float64
	for a := 0; a < k; a++ {
		bias += beta[a] * f.mean[a]
		for b := 0; b < k; b++ {
			v += beta[a] * beta[b] * f.s[a][b]
		}
	}
	bias -= c[0]
	return v + f.w*bias*bias
}

// eigen returns the eigenvalues of the symmetric m and its eigenvectors
// as columns, by Jacobi rotations.
func eigen(m [Features][Features]float64) (vals [Features]float64, vecs [Features][Features]float64) {
	for i := range vecs {
		vecs[i][i] = 1
	}
	for sweep := 0; sweep < 32; sweep++ {
		off := 0.0
		for p := 0; p < Features; p++ {
			for q := p + 1; q < Features; q++ {
				off += m[p][q] * m[p][q]
			}
		}
		if off < 1e-30 {
			break
		}
		for p := 0; p < Features; p++ {
			for q := p + 1; q < Features; q++ {
				if math.Abs(m[p][q]) < 1e-300 {
					continue
				}
				theta := (m[q][q] - m[p][p]) / (2 * m[p][q])
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for r := 0; r < Features; r++ {
					mrp, mrq := m[r][p], m[r][q]
					m[r][p], m[r][q] = c*mrp-s*mrq, s*mrp+c*mrq
				}
				for r := 0; r < Features; r++ {
					mpr, mqr := m[p][r], m[q][r]
					m[p][r], m[q][r] = c*mpr-s*mqr, s*mpr+c*mqr
				}
				for r := 0; r < Features; r++ {
					vrp, vrq := vecs[r][p], vecs[r][q]
					vecs[r][p], vecs[r][q] = c*vrp-s*vrq, s*vrp+c*vrq
				}
			}
		}
	}
	for i := range vals {
		vals[i] = m[i][i]
	}
	return vals, vecs
}

// Weights fills w with each request's predicted cost under m, when m's
// status is OK, or its tokens otherwise (the fallback docs/design.md
// states), and reports whether the model gave them. A batch whose weights
// are all 0 weighs each request 1.
func Weights(m Model, reqs []Request, w []float64) (modelled bool) {
	modelled = m.Status == OK
	share := 0.0
	if n := len(reqs); n > 0 {
		share = m.A / float64(n)
	}
	var sum float64
	for i, r := range reqs {
		if modelled {
			w[i] = share + m.Coef[0]*r[0] + m.Coef[1]*r[1] + m.Coef[2]*r[2]
		} else {
			w[i] = r[0]
		}
		sum += w[i]
	}
	if !(sum > 0) {
		for i := range reqs {
			w[i] = 1
		}
	}
	return modelled
}

// Split divides total among the weights w into parts, each within 1 of
// total*w[i]/sum(w), that add up to total exactly (cumulative rounding).
// Negative weights count as 0; if none is positive the split is even.
func Split(total int64, w []float64, parts []int64) {
	var sum float64
	for _, x := range w {
		sum += max(x, 0)
	}
	var cum float64
	var prev int64
	for i, x := range w {
		cum += max(x, 0)
		upto := total
		if i < len(w)-1 {
			frac := float64(i+1) / float64(len(w))
			if sum > 0 {
				frac = cum / sum
			}
			upto = min(max(int64(math.Round(float64(total)*frac)), prev), total)
		}
		parts[i] = upto - prev
		prev = upto
	}
}
