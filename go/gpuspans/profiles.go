package gpuspans

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gpuspans/gpuspans/go/profile"
)

// Profiles across builds (docs/design.md): while a profile is kept
// (StartProfile), each kernel window's lanes add to this build's profile
// (package profile), which StartProfile's goroutine writes to its file and compares with the profile of
// another build it found there at its start.

// ProfileOptions are StartProfile's options.
type ProfileOptions struct {
	// Path is the profile file: read at the start, written by this run
	// once a lane has profile.MinWindows windows. Only a profile is ever
	// replaced there.
	Path string
	// Build is the engine's build identity (its version, an image digest):
	// a profile of another build at Path is the one compared with.
	Build string
	// Every is how often the profile is written (0: DefaultProfileEvery,
	// at least a second); it is written at the end of the run too.
	Every time.Duration
}

// DefaultProfileEvery is how often StartProfile writes the profile.
const DefaultProfileEvery = time.Minute

// ProfileStatus is the hub's profile: where it is kept, what it was
// compared with, and what changed since.
type ProfileStatus struct {
	Path, Build string // "": no profile was ever kept
	Running     bool
	// Windows counts the windows added to this build's profile.
	Windows uint64
	// Written is when this build's profile was last written (zero: not
	// yet); WriteErr says why the latest write failed ("" if it did not).
	Written  time.Time
	WriteErr string
	// Before is the build of the profile found at Path at the start, and
	// when it was written ("": none, or ignored); Ignored says why a
	// profile found there is not compared with.
	Before        string
	BeforeWritten time.Time
	Ignored       string
	// Since compares this build's windows with Before's lane by lane,
	// once both have profile.MinWindows windows of it; nil until then. It
	// is replaced, never changed: a Snapshot may share it.
	Since *profile.Diff
}

// profiles is the hub's side of the profile.
type profiles struct {
	on atomic.Bool // a profile is kept: windows feed the builder

	// Guarded by the harvest lock.
	builder profile.Builder
	windows uint64           // windows added to the builder
	win     []profWindowLane // the window under analysis, its lanes
	nwin    int              // of win, those in use
	count   map[int32]int32  // scratch: launches per kernel name
	wl      profile.WindowLane

	mu sync.Mutex // guards st
	st ProfileStatus
}

// profWindowLane is one lane of a window on one device model and driver:
// the sums of its devices (a window covers every device of the process,
// and the profile counts it once).
type profWindowLane struct {
	model, driver       string
	lane                int32
	spans, busy         int64
	servedSpans, served int64
	causes              IdleCauses
	names               map[string]int // into kernels
	kernels             []profile.WindowKernel
}

// addProfileLane adds a window's lane on one device to the window's sums,
// when a profile is kept; flushProfileWindow adds them to the profile.
// settled: the window's served time was estimated for the lane, and t's
// latest recent entry is this window's. Caller holds the harvest lock.
func (h *Hub) addProfileLane(lw *laneWindow, t *laneTotals, settled bool) {
	p := &h.prof
	if !p.on.Load() || lw.spans <= 0 {
		return
	}
	model, driver := h.deviceModel(int(lw.key[0]))
	var w *profWindowLane
	for i := range p.win[:p.nwin] {
		if x := &p.win[i]; x.model == model && x.driver == driver && x.lane == lw.key[1] {
			w = x
		}
	}
	if w == nil {
		if p.nwin == len(p.win) {
			p.win = append(p.win, profWindowLane{names: make(map[string]int)})
		}
		w = &p.win[p.nwin]
		p.nwin++
		clear(w.names)
		*w = profWindowLane{model: model, driver: driver, lane: lw.key[1], names: w.names, kernels: w.kernels[:0]}
	}
	w.spans += lw.spans
	w.busy += lw.busy
	if settled {
		r := &t.recent[(t.settled-1)%GPUTimeRecentWindows]
		w.servedSpans += r.spans
		w.served += r.served
		w.causes.Add(r.causes)
	}
	if p.count == nil {
		p.count = make(map[int32]int32)
	}
	clear(p.count)
	for lk := range lw.launches {
		p.count[lk.name]++
	}
	for name, ns := range lw.shares {
		k, ok := w.names[h.kernelNames[name]]
		if !ok {
			k = len(w.kernels)
			w.names[h.kernelNames[name]] = k
			if k < cap(w.kernels) { // its launches' slice kept from an earlier window
				w.kernels = w.kernels[:k+1]
				w.kernels[k] = profile.WindowKernel{Name: h.kernelNames[name], PerLaunch: w.kernels[k].PerLaunch[:0]}
			} else {
				w.kernels = append(w.kernels, profile.WindowKernel{Name: h.kernelNames[name]})
			}
		}
		w.kernels[k].Time += float64(ns)
		w.kernels[k].Launches = max(w.kernels[k].Launches, float64(p.count[name]))
	}
	for lk, ns := range lw.launches {
		k, ok := w.names[h.kernelNames[lk.name]]
		if !ok || lk.n < 1 || lk.n > profile.MaxLaunches || p.count[lk.name] < 2 {
			continue
		}
		wk := &w.kernels[k]
		for len(wk.PerLaunch) < int(lk.n) {
			wk.PerLaunch = append(wk.PerLaunch, 0)
		}
		wk.PerLaunch[lk.n-1] += float64(ns)
	}
}

// flushProfileWindow adds the analysed window's lanes to the profile, per
// span. Caller holds the harvest lock.
func (h *Hub) flushProfileWindow() {
	p := &h.prof
	if p.nwin == 0 {
		return
	}
	for i := range p.win[:p.nwin] {
		w := &p.win[i]
		spans := float64(w.spans)
		wl := &p.wl
		*wl = profile.WindowLane{Model: w.model, Driver: w.driver, Lane: h.lanes[w.lane], Spans: w.spans,
			Busy: float64(w.busy) / spans, Kernels: append(wl.Kernels[:0], w.kernels...)}
		if w.servedSpans > 0 {
			ss, c := float64(w.servedSpans), &w.causes
			wl.Served = float64(w.served) / ss
			wl.Idle = profile.Causes{Host: float64(c.Host) / ss, Launch: float64(c.Launch) / ss,
				Copy: float64(c.Copy) / ss, Wait: float64(c.Wait) / ss, Other: float64(c.Other) / ss}
		}
		for j := range wl.Kernels {
			wl.Kernels[j].Time /= spans
			for n := range wl.Kernels[j].PerLaunch {
				wl.Kernels[j].PerLaunch[n] /= spans
			}
		}
		p.builder.Add(wl)
	}
	p.nwin = 0
	p.windows++
}

// deviceModel is a device's product name and driver version, as its pool
// tells them ("" when it cannot). Caller holds the harvest lock.
func (h *Hub) deviceModel(dev int) (model, driver string) {
	for _, r := range h.recs {
		if r != nil && r.device == dev {
			return r.id.Name, r.id.Driver
		}
	}
	return "", ""
}

// StartProfile keeps this build's GPU profile in a file (ProfileOptions)
// until the stop it returns is called. Before it returns it reads the
// profile there (a profile that cannot be used is ignored, logged and said
// in ProfileStatus.Ignored); then, on a goroutine of its own, never the
// stepping thread, it compares the hub's kernel windows with that profile
// when it is another build's, lane by lane once both have
// profile.MinWindows windows of the lane, logging a line a lane as it
// does, and writes this build's profile every o.Every. stop writes it a
// last time and waits for the goroutine; calling it again does nothing. A
// file at the path that is not a profile is never replaced. Errors: bad
// options, or a profile kept already.
func (h *Hub) StartProfile(o ProfileOptions) (stop func(), err error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	every := o.Every
	if every == 0 {
		every = DefaultProfileEvery
	}
	every = max(every, time.Second)
	if !h.prof.on.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("gpuspans: a profile is kept already (%s)", h.ProfileStatus().Path)
	}
	h.mu.Lock()
	h.prof.builder = profile.Builder{}
	h.prof.windows, h.prof.nwin = 0, 0
	h.mu.Unlock()
	r := &profileRun{h: h, o: o}
	r.setStatus(func(st *ProfileStatus) { *st = ProfileStatus{Path: o.Path, Build: o.Build, Running: true} })
	r.host, _ = os.Hostname()
	r.start()

	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer h.prof.on.Store(false)
		defer r.setStatus(func(st *ProfileStatus) { st.Running = false })
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		next := time.Now().Add(every)
		for {
			select {
			case <-quit:
				r.compare()
				r.write()
				return
			case now := <-tick.C:
				r.compare()
				if !now.Before(next) {
					r.write()
					next = now.Add(every)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}, nil
}

// Check reports what is wrong with o, naming the field.
func (o ProfileOptions) Check() error {
	switch {
	case o.Path == "":
		return errors.New("gpuspans: ProfileOptions.Path is empty")
	case o.Build == "":
		return errors.New("gpuspans: ProfileOptions.Build is empty: give the engine's build identity (its version, an image digest)")
	case len(o.Build) > profile.MaxName || !utf8.ValidString(o.Build) || strings.ContainsFunc(o.Build, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("gpuspans: ProfileOptions.Build %.40q: want at most %d bytes of UTF-8 text without control characters", o.Build, profile.MaxName)
	case o.Every < 0:
		return fmt.Errorf("gpuspans: ProfileOptions.Every is %v, want 0 (every %v) or more", o.Every, DefaultProfileEvery)
	}
	return nil
}

// ProfileStatus returns the hub's profile status.
func (h *Hub) ProfileStatus() ProfileStatus {
	h.prof.mu.Lock()
	defer h.prof.mu.Unlock()
	return h.prof.st
}

// profileRun is one StartProfile's state, on its goroutine.
type profileRun struct {
	h       *Hub
	o       ProfileOptions
	host    string
	before  *profile.Profile // another build's, to compare with; nil: none
	noWrite string           // why this run never writes ("": it does)
	seen    uint64           // builder windows in cur
	cur     *profile.Profile // this build's, as of seen
	written uint64           // builder windows in the profile last written
	logged  map[string]bool  // lanes whose comparison was logged
	checked bool             // the devices were checked against before's
	failed  string           // the latest write error logged
}

func (r *profileRun) logf(format string, args ...interface{}) {
	r.h.logf("gpuspans: profile %s: "+format, append([]interface{}{r.o.Path}, args...)...)
}

func (r *profileRun) setStatus(f func(st *ProfileStatus)) {
	r.h.prof.mu.Lock()
	f(&r.h.prof.st)
	r.h.prof.mu.Unlock()
}

// start reads the profile at the path.
func (r *profileRun) start() {
	if n := profile.RemoveStale(r.o.Path); n > 0 {
		r.logf("removed %d temporary files a writer killed mid-write left beside it", n)
	}
	p, err := profile.Read(r.o.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.logf("none yet: this build's (%q) is written once a lane has %d windows", r.o.Build, profile.MinWindows)
		return
	case err != nil:
		// A profile that cannot be read (corrupt, another version) is
		// replaced by this build's; anything else at the path is not, and
		// a failed write says why.
		if errors.Is(err, profile.ErrNotProfile) {
			r.noWrite = "the file there is not a profile: never replaced"
			r.setStatus(func(st *ProfileStatus) { st.WriteErr = "not written: " + r.noWrite })
		}
		msg := strings.TrimPrefix(err.Error(), "profile "+r.o.Path+": ")
		r.ignore("cannot be read (%s): not compared with; %s", msg, orWritten(r.noWrite))
		return
	case p.Build == r.o.Build:
		r.logf("this build's (%q, written %s): nothing to compare with; rewritten once a lane has %d windows", p.Build, p.Written.Format(time.RFC3339), profile.MinWindows)
		return
	}
	if !slices.ContainsFunc(p.Lanes, func(l profile.Lane) bool { _, ok := r.h.LaneIndex(l.Lane); return ok }) {
		r.ignore("build %q's has none of this hub's lanes (%s): not compared with; %s", p.Build, laneNames(p), orWritten(""))
		return
	}
	r.before = p
	r.setStatus(func(st *ProfileStatus) { st.Before, st.BeforeWritten = p.Build, p.Written })
	r.logf("build %q's (written %s): compared with this build (%q) lane by lane once a lane has %d windows", p.Build, p.Written.Format(time.RFC3339), r.o.Build, profile.MinWindows)
}

func orWritten(noWrite string) string {
	if noWrite != "" {
		return noWrite
	}
	return "this build's replaces it once a lane has enough windows"
}

// laneNames lists p's lanes, each once, at most 8 of them.
func laneNames(p *profile.Profile) string {
	var s []string
	for _, l := range p.Lanes {
		if q := fmt.Sprintf("%.40q", l.Lane); !slices.Contains(s, q) {
			s = append(s, q)
		}
	}
	if len(s) > 8 {
		s = append(s[:8], fmt.Sprintf("and %d more", len(s)-8))
	}
	return strings.Join(s, ", ")
}

// ignore stops comparing, saying why in the log and the status.
func (r *profileRun) ignore(format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	r.before = nil
	r.logf("%s", msg)
	r.setStatus(func(st *ProfileStatus) { st.Before, st.BeforeWritten, st.Ignored = "", time.Time{}, msg })
}

// snapshot takes this build's profile from the builder when windows were
// added since the last one.
func (r *profileRun) snapshot() bool {
	h := r.h
	h.mu.Lock()
	n := h.prof.windows
	if n == r.seen {
		h.mu.Unlock()
		return false
	}
	r.cur = h.prof.builder.Profile(r.o.Build, r.host, h.now())
	h.mu.Unlock()
	r.seen = n
	r.setStatus(func(st *ProfileStatus) { st.Windows = n })
	return true
}

// compare compares this build's windows with the other build's profile.
func (r *profileRun) compare() {
	if r.before == nil || !r.snapshot() {
		return // with nothing to compare with, only write takes the profile
	}
	if !r.checked && len(r.cur.Lanes) > 0 {
		r.checked = true
		if !r.checkDevices() {
			return
		}
	}
	d := profile.Compare(r.before, r.cur, profile.CompareOptions{})
	if len(d.Lanes) == 0 {
		return
	}
	if r.logged == nil {
		r.logged = make(map[string]bool)
	}
	for i := range d.Lanes {
		l := &d.Lanes[i]
		if k := l.Model + "\x00" + l.Lane; !r.logged[k] {
			r.logged[k] = true
			r.h.logf("gpuspans: since build %q: %s: %s", d.Before, l.Verdict(), l.Line())
		}
	}
	r.setStatus(func(st *ProfileStatus) { st.Since = &d })
}

// checkDevices refuses another build's profile measured on none of this
// hub's device models, or with another driver: its times say nothing of
// this build's.
func (r *profileRun) checkDevices() bool {
	type md struct{ model, driver string }
	var here, there []md
	for _, l := range r.cur.Lanes {
		if m := (md{l.Model, l.Driver}); !slices.Contains(here, m) {
			here = append(here, m)
		}
	}
	for _, l := range r.before.Lanes {
		if m := (md{l.Model, l.Driver}); !slices.Contains(there, m) {
			there = append(there, m)
		}
	}
	sameModel := false
	for _, t := range there {
		for _, m := range here {
			if t.model == m.model {
				sameModel = true
				if t.driver == m.driver {
					return true
				}
			}
		}
	}
	name := func(s []md) string {
		var b []string
		for _, m := range s {
			b = append(b, fmt.Sprintf("%q driver %q", m.model, m.driver))
		}
		return strings.Join(b, ", ")
	}
	if sameModel {
		r.ignore("build %q's was measured with another driver (%s; this hub: %s): not compared with", r.before.Build, name(there), name(here))
	} else {
		r.ignore("build %q's was measured on another device model (%s; this hub: %s): not compared with", r.before.Build, name(there), name(here))
	}
	return false
}

// write writes this build's profile once a lane has enough windows.
func (r *profileRun) write() {
	r.snapshot()
	if r.noWrite != "" || r.cur == nil || r.seen == r.written {
		return // nothing new since the last write: an idle engine writes nothing
	}
	enough := false
	for _, l := range r.cur.Lanes {
		enough = enough || l.Windows >= profile.MinWindows
	}
	if !enough {
		return
	}
	err := profile.Write(r.o.Path, r.cur)
	msg := ""
	if err != nil {
		msg = err.Error()
		if msg != r.failed {
			r.h.logf("gpuspans: %s", msg)
		}
	}
	r.failed = msg
	if err == nil {
		r.written = r.seen
	}
	r.setStatus(func(st *ProfileStatus) {
		st.WriteErr = msg
		if err == nil {
			st.Written = r.cur.Written
		}
	})
}
