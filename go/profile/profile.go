// Package profile is a GPU profile that outlives the process: per lane and
// device model, what kernel windows measured of a build (a lane's time per
// step outside windows, its busy time, its idle by cause, each kernel
// name's time and launches per step), so that the next build can be
// compared with it at its start, and two builds or two machines with
// `gpuspans profile diff` (docs/design.md, profiles across builds).
//
// A profile is a JSON file of bounded size. The hub writes it (Write), the
// command and the hub read it (Read), and Compare says what changed.
package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpuspans/gpuspans/go/internal/outfile"
	"github.com/gpuspans/gpuspans/go/internal/smallfile"
	"github.com/gpuspans/gpuspans/go/internal/textsafe"
)

// Format names the file's format; a file without it is not a profile.
const Format = "gpuspans-profile/1"

// Bounds of a profile. A lane keeps its MaxKernels heaviest kernel names;
// with MaxLanes lanes, names of MaxName bytes and the numbers around them
// a profile stays under MaxBytes, which Read refuses past: Write escapes
// only what JSON must (a name of quotes or U+2028 doubles, the worst case:
// 29 MB, TestWorstCaseFits), and a value is at most MaxValue.
const (
	MaxLanes   = 256 // lane entries (a lane on one device model is one)
	MaxKernels = 64  // kernel names per lane
	MaxName    = 512 // bytes of a kernel, lane, model, driver or build name
	// A kernel name's launches kept apart (Kernel.PerLaunch): at most
	// MaxLaunches of one name and MaxLaneLaunches in a lane, the
	// heaviest names'.
	MaxLaunches     = 128
	MaxLaneLaunches = 256
	MaxBytes        = 32 << 20
	// MaxValue bounds a time or a count per span (1e15 ns: 11 days); a
	// Stat's M2 is bounded by N times its square.
	MaxValue = 1e15
)

// Stat is the mean of a measurement over windows, with its spread
// (Welford's running sums), in ns per lane span.
type Stat struct {
	N    uint64  `json:"n"`
	Mean float64 `json:"mean"`
	M2   float64 `json:"m2"` // the sum of squared deviations from Mean
}

// Add adds one window's value.
func (s *Stat) Add(x float64) {
	s.N++
	d := x - s.Mean
	s.Mean += d / float64(s.N)
	s.M2 += d * (x - s.Mean)
}

// SE is the standard error of the mean; 0 with fewer than 2 values.
func (s Stat) SE() float64 {
	if s.N < 2 {
		return 0
	}
	return math.Sqrt(s.M2 / float64(s.N-1) / float64(s.N))
}

// Causes are a lane's idle time per span, by why the device waited (as
// gpuspans.IdleCauses), in ns.
type Causes struct {
	Host   float64 `json:"host"`
	Launch float64 `json:"launch"`
	Copy   float64 `json:"copy"`
	Wait   float64 `json:"wait"`
	Other  float64 `json:"other"`
}

// Kernel is one kernel name's time and launches per lane span.
type Kernel struct {
	Name     string  `json:"name"`
	Launches float64 `json:"launches"` // in a span, the mean over the windows that ran it
	Time     Stat    `json:"time_ns"`  // its intervals inside the span, summed
	// PerLaunch is the time of each of its launches in a span, the n-th
	// at n-1, for a name launched more than once a span: one layer's
	// matmul that grew among 92 launches of its name moves its launch by
	// all it grew, and the name's sum by a 92nd of that.
	PerLaunch []Stat `json:"per_launch,omitempty"`
}

// Lane is what windows measured of one lane on one device model: every
// device of that model and driver adds to it.
type Lane struct {
	Model   string `json:"model"`  // the device's product name, "NVIDIA H100 80GB HBM3"
	Driver  string `json:"driver"` // the driver's CUDA version, "13.0"
	Lane    string `json:"lane"`
	Windows uint64 `json:"windows"` // windows measured
	Spans   uint64 `json:"spans"`   // lane spans measured
	// Time is the lane's time per span outside windows (the served time,
	// without the windows' own cost), Busy the device's busy time inside
	// it, Idle the rest by cause.
	Time Stat   `json:"time_ns"`
	Busy Stat   `json:"busy_ns"`
	Idle Causes `json:"idle_ns"`
	// Kernels are the heaviest kernel names, most first; KernelsCut counts
	// the names left out, and CutBelow is the heaviest of them (ns per
	// span): a name missing from the list may have had up to that.
	Kernels    []Kernel `json:"kernels"`
	KernelsCut int      `json:"kernels_cut,omitempty"`
	CutBelow   float64  `json:"cut_below_ns,omitempty"`
}

// Profile is one build's profile.
type Profile struct {
	Format  string    `json:"format"`
	Build   string    `json:"build"` // the engine's build identity
	Written time.Time `json:"written"`
	Host    string    `json:"host,omitempty"` // the machine that wrote it
	Lanes   []Lane    `json:"lanes"`
}

// Lane returns p's lane of name on model, or nil.
func (p *Profile) Lane(model, lane string) *Lane {
	for i := range p.Lanes {
		if l := &p.Lanes[i]; l.Model == model && l.Lane == lane {
			return l
		}
	}
	return nil
}

// ErrNotProfile marks a file that is not a profile at all (no Format):
// never read as one, never replaced by one.
var ErrNotProfile = errors.New("not a gpuspans profile")

// Read reads and checks the profile at path. Errors name the file and what
// is wrong with it; a file that is not a profile wraps ErrNotProfile.
func Read(path string) (*Profile, error) {
	b, err := smallfile.Read(path, MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return p, nil
}

// Parse decodes and checks a profile. A document whose "format" is not
// found before the first syntax error is not a profile (ErrNotProfile); a
// profile cut short or otherwise broken is "corrupt". The lists are
// bounded as they decode: a file of millions of empty lanes is refused at
// the first past MaxLanes, never held.
func Parse(b []byte) (*Profile, error) {
	f := formatOf(b)
	if f == "" {
		return nil, fmt.Errorf("%w (no %q format field)", ErrNotProfile, Format)
	}
	if f != Format {
		return nil, fmt.Errorf("format %.40q, want %q (written by another version of gpuspans)", f, Format)
	}
	var pj profileJSON
	if err := json.Unmarshal(b, &pj); err != nil {
		if be := (*boundError)(nil); errors.As(err, &be) {
			return nil, be
		}
		return nil, fmt.Errorf("corrupt: %v", err)
	}
	p := pj.Profile
	p.Lanes = pj.Lanes.l
	if err := p.Check(); err != nil {
		return nil, err
	}
	return &p, nil
}

// formatOf returns the string value of b's "format" key if b opens as a
// JSON object in which that key comes before anything malformed (a profile
// cut short still has it: Write puts it first); "" otherwise.
func formatOf(b []byte) string {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return ""
		}
		if t == "format" {
			t, _ := d.Token()
			s, _ := t.(string)
			return s
		}
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// profileJSON, laneJSON and their lists decode a profile with its lists
// bounded while they are read.
type (
	profileJSON struct {
		Profile
		Lanes laneList `json:"lanes"`
	}
	laneJSON struct {
		Lane
		Kernels kernelList `json:"kernels"`
	}
	kernelJSON struct {
		Kernel
		PerLaunch statList `json:"per_launch"`
	}
	statList struct {
		l   []Stat
		set bool
	}
	laneList struct {
		l   []Lane
		set bool
	}
	kernelList struct {
		l   []Kernel
		set bool
	}
)

// boundError is a list longer than its bound, or given twice.
type boundError struct{ msg string }

func (e *boundError) Error() string { return e.msg }

// A list's key given twice is refused: each would be decoded, and a file of
// a key again and again would decode millions of elements in all.
func errTwice(what string) error { return &boundError{fmt.Sprintf("%s given twice", what)} }

func (l *laneList) UnmarshalJSON(b []byte) error {
	if l.set {
		return errTwice("lanes")
	}
	l.set = true
	return decodeList(b, MaxLanes, "lanes", func(d *json.Decoder) error {
		var lj laneJSON
		if err := d.Decode(&lj); err != nil {
			return err
		}
		lj.Lane.Kernels = lj.Kernels.l
		l.l = append(l.l, lj.Lane)
		return nil
	})
}

func (l *kernelList) UnmarshalJSON(b []byte) error {
	if l.set {
		return errTwice("a lane's kernels")
	}
	l.set = true
	return decodeList(b, MaxKernels, "kernels in a lane", func(d *json.Decoder) error {
		var kj kernelJSON
		if err := d.Decode(&kj); err != nil {
			return err
		}
		kj.Kernel.PerLaunch = kj.PerLaunch.l
		l.l = append(l.l, kj.Kernel)
		return nil
	})
}

func (l *statList) UnmarshalJSON(b []byte) error {
	if l.set {
		return errTwice("a kernel's launches")
	}
	l.set = true
	return decodeList(b, MaxLaunches, "launches of a kernel", func(d *json.Decoder) error {
		var st Stat
		if err := d.Decode(&st); err != nil {
			return err
		}
		l.l = append(l.l, st)
		return nil
	})
}

// decodeList decodes the JSON list b (or null) an element at a time with
// each, refusing more than max elements.
func decodeList(b []byte, max int, what string, each func(*json.Decoder) error) error {
	if string(b) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('[') {
		return fmt.Errorf("%s: not a list", what)
	}
	for n := 0; d.More(); n++ {
		if n == max {
			return &boundError{fmt.Sprintf("more than %d %s, at most %d", max, what, max)}
		}
		if err := each(d); err != nil {
			return err
		}
	}
	_, err := d.Token()
	return err
}

// Check reports the first thing wrong with p: a field out of its bounds, a
// number that is not a finite non-negative one, a lane twice.
func (p *Profile) Check() error {
	if p.Format != Format {
		return fmt.Errorf("format %.40q, want %q", p.Format, Format)
	}
	if err := checkName("build", p.Build, true); err != nil {
		return err
	}
	if err := checkName("host", p.Host, false); err != nil {
		return err
	}
	if len(p.Lanes) > MaxLanes {
		return fmt.Errorf("%d lanes, at most %d", len(p.Lanes), MaxLanes)
	}
	seen := make(map[[2]string]bool, len(p.Lanes))
	for i := range p.Lanes {
		l := &p.Lanes[i]
		for _, f := range []struct {
			what, v string
			need    bool
		}{{"model", l.Model, false}, {"driver", l.Driver, false}, {"lane", l.Lane, true}} {
			if err := checkName(f.what, f.v, f.need); err != nil {
				return fmt.Errorf("lane %d: %w", i, err)
			}
		}
		k := [2]string{l.Model, l.Lane}
		if seen[k] {
			return fmt.Errorf("lane %q on %q twice", l.Lane, l.Model)
		}
		seen[k] = true
		if len(l.Kernels) > MaxKernels {
			return fmt.Errorf("lane %q: %d kernels, at most %d", l.Lane, len(l.Kernels), MaxKernels)
		}
		nums := []float64{l.Time.Mean, l.Busy.Mean, l.Idle.Host, l.Idle.Launch, l.Idle.Copy, l.Idle.Wait, l.Idle.Other, l.CutBelow}
		if l.KernelsCut < 0 {
			return fmt.Errorf("lane %q: kernels_cut %d", l.Lane, l.KernelsCut)
		}
		names := make(map[string]bool, len(l.Kernels))
		launches := 0
		for j := range l.Kernels {
			kr := &l.Kernels[j]
			if err := checkName("kernel", kr.Name, true); err != nil {
				return fmt.Errorf("lane %q: %w", l.Lane, err)
			}
			if names[kr.Name] {
				return fmt.Errorf("lane %q: kernel %.80q twice", l.Lane, kr.Name)
			}
			names[kr.Name] = true
			if kr.Time.N > l.Windows {
				return fmt.Errorf("lane %q: kernel %.80q in %d windows of %d", l.Lane, kr.Name, kr.Time.N, l.Windows)
			}
			nums = append(nums, kr.Launches, kr.Time.Mean)
			if len(kr.PerLaunch) > MaxLaunches {
				return fmt.Errorf("lane %q: kernel %.80q: %d launches, at most %d", l.Lane, kr.Name, len(kr.PerLaunch), MaxLaunches)
			}
			if launches += len(kr.PerLaunch); launches > MaxLaneLaunches {
				return fmt.Errorf("lane %q: more than %d launches kept apart", l.Lane, MaxLaneLaunches)
			}
			for _, st := range kr.PerLaunch {
				if st.N > l.Windows {
					return fmt.Errorf("lane %q: a launch of kernel %.80q in %d windows of %d", l.Lane, kr.Name, st.N, l.Windows)
				}
				nums = append(nums, st.Mean)
			}
		}
		if l.Time.N > l.Windows || l.Busy.N > l.Windows {
			return fmt.Errorf("lane %q: more values than its %d windows", l.Lane, l.Windows)
		}
		for _, x := range nums {
			if !(x >= 0 && x <= MaxValue) { // NaN too
				return fmt.Errorf("lane %q: a value of %v (times are ns per span: finite, 0 to %g)", l.Lane, x, float64(MaxValue))
			}
		}
		stats := []Stat{l.Time, l.Busy}
		for j := range l.Kernels {
			stats = append(stats, l.Kernels[j].Time)
			stats = append(stats, l.Kernels[j].PerLaunch...)
		}
		for _, st := range stats {
			// M2 sums N squared deviations: a long run's grows past MaxValue.
			if !(st.M2 >= 0 && st.M2 <= float64(st.N)*MaxValue*MaxValue) {
				return fmt.Errorf("lane %q: a spread (m2) of %v over %d values", l.Lane, st.M2, st.N)
			}
		}
	}
	return nil
}

// checkName checks one of p's names: valid UTF-8 of at most MaxName
// bytes, without a character unsafe for a terminal (textsafe); need: not
// empty.
func checkName(what, s string, need bool) error {
	switch {
	case need && s == "":
		return fmt.Errorf("%s empty", what)
	case len(s) > MaxName:
		return fmt.Errorf("%s of %d bytes, at most %d", what, len(s), MaxName)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s %.80q is not UTF-8", what, s)
	}
	for _, r := range s {
		if textsafe.Unsafe(r) {
			kind := "control"
			if r > 0x9f {
				kind = "format"
			}
			return fmt.Errorf("%s %.80q has a %s character (%U)", what, s, kind, r)
		}
	}
	return nil
}

// Write writes p to path, crash-safe (a complete file, synced, renamed
// onto the path), replacing only a profile: a file at path that is not
// one, or not a regular file, is never replaced (ErrNotProfile). A
// profile of another format version, or one cut short, is replaced.
func Write(path string, p *Profile) error {
	if err := p.Check(); err != nil {
		return fmt.Errorf("profile %s: not written: %w", path, err)
	}
	if err := Owned(path); err != nil {
		return err
	}
	b, err := Marshal(p)
	if err != nil {
		return fmt.Errorf("profile %s: %w", path, err)
	}
	if len(b) > MaxBytes {
		return fmt.Errorf("profile %s: %d bytes, more than %d: not written", path, len(b), MaxBytes)
	}
	f, err := outfile.Create("profile", path)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Abort()
		return fmt.Errorf("profile %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Abort()
		return fmt.Errorf("profile %s: %w", path, err)
	}
	if testHookBeforeCommit != nil {
		testHookBeforeCommit()
	}
	// Looked at again: another file may have been put there while this
	// one was written and synced; and what the rename takes out of the
	// path's place is looked at once more, put back unless a profile.
	if err := Owned(path); err != nil {
		f.Abort()
		return err
	}
	return f.CommitIf(func(old string) error {
		if err := isProfile(old); err != nil {
			return fmt.Errorf("profile %s: %w", path, err)
		}
		return nil
	})
}

// isProfile reports whether the file at p is a profile (of any format
// version, even one cut short): ErrNotProfile if not.
func isProfile(p string) error {
	b, err := smallfile.Read(p, MaxBytes)
	if err != nil {
		return fmt.Errorf("%w: not replaced", err)
	}
	if !strings.HasPrefix(formatOf(b), "gpuspans-profile/") {
		return fmt.Errorf("%w: gpuspans replaces only a profile it wrote", ErrNotProfile)
	}
	return nil
}

// tempOfOurs reports whether b begins as Marshal's output does: a profile
// cut short (a writer killed mid-write).
func tempOfOurs(b []byte) bool {
	return bytes.HasPrefix(b, []byte("{\n \"format\": \"gpuspans-profile/"))
}

// StaleAge is how old a temporary file of a profile's writer must be for
// RemoveStale to remove it: a running writer finishes within seconds.
const StaleAge = time.Minute

// RemoveStale removes what writers killed mid-write left beside path:
// temporary files named as this package's writer names them, older than
// StaleAge, that begin as a profile does; at most 64 a call. It returns
// how many it removed.
func RemoveStale(path string) int {
	return outfile.RemoveStale(path, StaleAge, 64, func(tmp string) bool {
		f, err := os.Open(tmp)
		if err != nil {
			return false
		}
		defer f.Close()
		head := make([]byte, 64)
		n, _ := io.ReadFull(f, head)
		return tempOfOurs(head[:n])
	})
}

// testHookBeforeCommit, when set by a test, runs after the temporary file
// is synced, before the path is looked at again and replaced.
var testHookBeforeCommit func()

// Marshal is p as Write writes it: indented JSON, names as they are
// (JSON escapes only what it must: a kernel's "<" stays "<"), ending in a
// newline.
func Marshal(p *Profile) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	e.SetIndent("", " ")
	if err := e.Encode(p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Owned reports whether a profile may be written at path: nothing is
// there, or a profile (of any format version, even one cut short) is. It
// never creates anything.
func Owned(path string) error {
	if err := outfile.Check("profile", path); err != nil {
		return err
	}
	b, err := smallfile.Read(path, MaxBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("profile %s: %w: not replaced", path, err)
	}
	if !strings.HasPrefix(formatOf(b), "gpuspans-profile/") {
		return fmt.Errorf("profile %s: %w: gpuspans replaces only a profile it wrote", path, ErrNotProfile)
	}
	return nil
}
