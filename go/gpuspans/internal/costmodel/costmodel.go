// Package costmodel fits what a serve lane's step costs against the
// composition of the batch it served, online, and splits one step's
// measured time among the step's requests so that the parts add up to the
// step exactly. It is pure arithmetic over plain values: go/gpuspans feeds
// it the lane spans it lands and the batches engines declare.
//
// The model (docs/design.md, "Whose GPU time") is linear in what each
// request brings to a step:
//
//	step time = A + B * tokens + C * pairs
//
// summed over the step's requests: A is the step's fixed cost (weights
// read, launches), shared equally by its requests; B is the cost of a
// token processed (new or decoded); C the cost of an attention pair (a
// token times the context it attends to). Fit holds exponentially
// weighted moments of the lane's steps, so that Model is a least-squares
// fit over the recent ones with A, B and C never negative, and it says
// when the steps cannot price apart what tells the batch's requests apart.
package costmodel

import "math"

// Request is what one request brought to one step.
type Request struct {
	Tokens float64 // tokens the step processed for it (new and decoded)
	Pairs  float64 // attention pairs: each of those tokens times the context it attends to
}

// Pairs returns the attention pairs of tokens new tokens at the end of a
// context of ctx tokens (these included) under causal attention: token j
// of them attends to the ctx-tokens+j tokens before it and itself.
func Pairs(tokens, ctx uint32) float64 {
	t, c := float64(tokens), float64(ctx)
	if c < t {
		c = t
	}
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
	// Undetermined: requests within a batch differ in something (their
	// tokens, their context) whose cost the steps cannot separate from
	// the rest, because across steps it never varied on its own: all
	// batches alike, say.
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
	// MinVariation is the coefficient of variation across steps below
	// which a total (tokens or pairs per step) counts as constant.
	MinVariation = 0.02
	// MaxCorrelation is the squared correlation of tokens and pairs per
	// step above which the two move as one.
	MaxCorrelation = 0.998
	// MinSpread is the relative within-batch variance above which the
	// requests of a batch count as differing in a feature.
	MinSpread = 1e-3
	// MaxResidual is the fit's root-mean-square residual, over the mean
	// step time, above which the composition does not explain the lane.
	MaxResidual = 0.25
)

// decay is the weight a step's moments keep per later step.
var decay = math.Exp2(-1.0 / HalfLife)

// Fit is one lane's exponentially weighted moments. The zero Fit is empty.
// Not safe for concurrent use.
type Fit struct {
	steps uint64
	w     float64    // total weight
	mean  [3]float64 // tokens, pairs, time per step
	s     [3][3]float64
	// spread: exponentially weighted means of the within-batch relative
	// variances of tokens, pairs, and pairs against tokens.
	spread [3]float64
}

// Model is a fitted lane model.
type Model struct {
	Status  Status
	A, B, C float64 // ns per step, per token, per attention pair
	Steps   uint64  // steps observed
	// Residual is the fit's root-mean-square residual over the mean step
	// time.
	Residual float64
	// MeanTime is the mean step time, ns.
	MeanTime float64
}

// Sums returns a batch's totals, and the within-batch relative variances
// of its tokens, its pairs, and its pairs against its tokens.
func Sums(reqs []Request) (tokens, pairs float64, spread [3]float64) {
	var t2, p2 float64
	for _, r := range reqs {
		tokens += r.Tokens
		pairs += r.Pairs
		t2 += r.Tokens * r.Tokens
		p2 += r.Pairs * r.Pairs
	}
	n := float64(len(reqs))
	if n == 0 {
		return
	}
	mt, mp := tokens/n, pairs/n
	var dt, dp, dr float64
	ratio := 0.0
	if tokens > 0 {
		ratio = pairs / tokens
	}
	for _, r := range reqs {
		dt += (r.Tokens - mt) * (r.Tokens - mt)
		dp += (r.Pairs - mp) * (r.Pairs - mp)
		e := r.Pairs - ratio*r.Tokens
		dr += e * e
	}
	if t2 > 0 {
		spread[0] = dt / t2
	}
	if p2 > 0 {
		spread[1] = dp / p2
		spread[2] = dr / p2
	}
	return
}

// Observe adds a step that served reqs in ns nanoseconds.
func (f *Fit) Observe(reqs []Request, ns float64) {
	t, p, sp := Sums(reqs)
	f.ObserveSums(t, p, sp, ns)
}

// ObserveSums adds a step from Sums' results and its time.
func (f *Fit) ObserveSums(tokens, pairs float64, spread [3]float64, ns float64) {
	f.steps++
	x := [3]float64{tokens, pairs, ns}
	f.w = f.w*decay + 1
	var old [3]float64
	for i := range x {
		old[i] = x[i] - f.mean[i]
		f.mean[i] += old[i] / f.w
	}
	for i := range x {
		for j := range x {
			f.s[i][j] = f.s[i][j]*decay + old[i]*(x[j]-f.mean[j])
		}
	}
	for i := range spread {
		f.spread[i] += (spread[i] - f.spread[i]) / f.w
	}
}

// Steps returns the steps observed.
func (f *Fit) Steps() uint64 { return f.steps }

// Model returns the least-squares model over the moments, with A, B and C
// at least 0, and its status.
func (f *Fit) Model() Model {
	m := Model{Steps: f.steps, MeanTime: f.mean[2]}
	if f.steps == 0 {
		return m
	}
	best, bestErr := [3]float64{}, math.Inf(1)
	for _, c := range f.candidates() {
		if c[0] < 0 || c[1] < 0 || c[2] < 0 {
			continue
		}
		if e := f.sse(c); e < bestErr {
			best, bestErr = c, e
		}
	}
	m.A, m.B, m.C = best[0], best[1], best[2]
	if f.mean[2] > 0 && !math.IsInf(bestErr, 1) {
		m.Residual = math.Sqrt(max(bestErr, 0)/f.w) / f.mean[2]
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

// varies reports whether total i (0 tokens, 1 pairs) moved across steps.
func (f *Fit) varies(i int) bool {
	v := f.s[i][i] / f.w
	m := f.mean[i]
	return m > 0 && v > MinVariation*MinVariation*m*m
}

// determined reports whether the steps price apart whatever differs
// between the requests of a batch.
func (f *Fit) determined() bool {
	vt, vp := f.varies(0), f.varies(1)
	if f.spread[0] > MinSpread && !vt {
		return false // tokens differ within batches; per step they never vary
	}
	if f.spread[1] > MinSpread && !vp {
		return false // contexts differ within batches; per step they never vary
	}
	if vt && vp {
		if r := f.s[0][1] * f.s[0][1] / (f.s[0][0] * f.s[1][1]); r > MaxCorrelation && f.spread[2] > MinSpread {
			return false // tokens and pairs move as one across steps, not within batches
		}
	}
	return true
}

// candidates are the least-squares fits with each subset of A, B and C
// free and the rest 0, as (A, B, C); a subset the moments cannot fit is
// left out (NaN).
func (f *Fit) candidates() [7][3]float64 {
	nan := math.NaN()
	var out [7][3]float64
	for i := range out {
		out[i] = [3]float64{nan, nan, nan}
	}
	mt, mp, my := f.mean[0], f.mean[1], f.mean[2]
	stt, spp, stp, sty, spy := f.s[0][0], f.s[1][1], f.s[0][1], f.s[0][2], f.s[1][2]
	// With A free: centred moments.
	out[0] = [3]float64{my, 0, 0}
	if stt > 0 {
		b := sty / stt
		out[1] = [3]float64{my - b*mt, b, 0}
	}
	if spp > 0 {
		c := spy / spp
		out[2] = [3]float64{my - c*mp, 0, c}
	}
	if det := stt*spp - stp*stp; det > 1e-12*stt*spp && det > 0 {
		b := (sty*spp - spy*stp) / det
		c := (spy*stt - sty*stp) / det
		out[3] = [3]float64{my - b*mt - c*mp, b, c}
	}
	// With A = 0: raw second moments, per unit weight.
	rtt, rpp, rtp := stt/f.w+mt*mt, spp/f.w+mp*mp, stp/f.w+mt*mp
	rty, rpy := sty/f.w+mt*my, spy/f.w+mp*my
	if rtt > 0 {
		out[4] = [3]float64{0, rty / rtt, 0}
	}
	if rpp > 0 {
		out[5] = [3]float64{0, 0, rpy / rpp}
	}
	if det := rtt*rpp - rtp*rtp; det > 1e-12*rtt*rpp && det > 0 {
		out[6] = [3]float64{0, (rty*rpp - rpy*rtp) / det, (rpy*rtt - rty*rtp) / det}
	}
	return out
}

// sse is the weighted sum of squared residuals of (A, B, C); +Inf for a
// candidate left out.
func (f *Fit) sse(c [3]float64) float64 {
	if math.IsNaN(c[0]) || math.IsNaN(c[1]) || math.IsNaN(c[2]) {
		return math.Inf(1)
	}
	b, k := c[1], c[2]
	v := f.s[2][2] - 2*b*f.s[0][2] - 2*k*f.s[1][2] + b*b*f.s[0][0] + 2*b*k*f.s[0][1] + k*k*f.s[1][1]
	bias := f.mean[2] - c[0] - b*f.mean[0] - k*f.mean[1]
	return v + f.w*bias*bias
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
			w[i] = share + m.B*r.Tokens + m.C*r.Pairs
		} else {
			w[i] = r.Tokens
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
