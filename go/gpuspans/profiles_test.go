package gpuspans_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
	"github.com/gpuspans/gpuspans/go/profile"
)

// profileRun runs a build on a fresh hub keeping its profile at path: windows
// steps whose decode lane runs mm, k2name for k2 and mm again; it returns
// the status once the profile's goroutine has stopped, and the log.
func profileRun(t *testing.T, path, build, k2name string, k2 time.Duration, windows int) (gpuspans.ProfileStatus, string) {
	t.Helper()
	log := new(gpuspanstest.Log)
	r := newGPURigLog(t, log)
	h := r.h
	stop, err := h.StartProfile(gpuspans.ProfileOptions{Path: path, Build: build, Every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for w := 0; w < windows; w++ {
		for i := 0; i < 2*gpuspans.GPUTimeServedSpans; i++ {
			r.h.BeginStep()
			r.h.LaneBegin(1)
			r.launch(rigMain, "mm", 100*us)
			r.clock.Advance(110 * us)
			r.launch(rigMain, k2name, k2)
			r.clock.Advance(k2 + 10*us)
			r.launch(rigMain, "mm", 100*us)
			r.h.LaneEnd(1)
			r.clock.Advance(time.Millisecond)
		}
		r.clock.Advance(time.Second)
	}
	r.h.BeginStep()
	r.h.Harvest()
	r.h.BeginStep()
	r.h.Harvest()
	stop()
	stop() // a second stop does nothing
	return h.ProfileStatus(), strings.Join(log.Lines(), "\n")
}

func TestProfileNamesWhatTheNewBuildChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decode.profile")
	st, log := profileRun(t, path, "v1", "k2", 100*us, 8)
	if st.Written.IsZero() || st.WriteErr != "" || st.Since != nil {
		t.Fatalf("v1: %+v\n%s", st, log)
	}
	p, err := profile.Read(path)
	if err != nil || p.Build != "v1" || len(p.Lanes) != 1 || p.Lanes[0].Windows < profile.MinWindows {
		t.Fatalf("v1's profile: %+v, %v", p, err)
	}

	// The same build again: nothing compared, nothing named.
	st, log = profileRun(t, path, "v1", "k2", 100*us, 8)
	if st.Since != nil || st.Before != "" || strings.Contains(log, "since build") {
		t.Fatalf("v1 again compared: %+v\n%s", st.Since, log)
	}

	// k2 20% slower: named alone, and the lane worse.
	st, log = profileRun(t, path, "v2", "k2", 120*us, 8)
	if st.Before != "v1" || st.Since == nil || len(st.Since.Lanes) != 1 {
		t.Fatalf("v2: %+v\n%s", st, log)
	}
	l := st.Since.Lanes[0]
	if len(l.Kernels) != 1 || l.Kernels[0].Name != "k2" || l.Kernels[0].Change != profile.Grew || !l.Worse() {
		t.Fatalf("v2 named %+v, want k2 grown alone", l.Kernels)
	}
	if !strings.Contains(log, `since build "v1": WORSE: lane "decode"`) || !strings.Contains(log, "k2 grew +20.0%") {
		t.Errorf("v2's log line:\n%s", log)
	}

	// k2 renamed by v3: new and gone, nothing else.
	st, log = profileRun(t, path, "v3", "k2_sm90", 120*us, 8)
	if st.Since == nil || len(st.Since.Lanes) != 1 {
		t.Fatalf("v3: %+v\n%s", st, log)
	}
	got := map[string]profile.Change{}
	for _, k := range st.Since.Lanes[0].Kernels {
		got[k.Name] = k.Change
	}
	if len(got) != 2 || got["k2_sm90"] != profile.New || got["k2"] != profile.Gone {
		t.Errorf("v3 named %+v, want k2_sm90 new and k2 gone", got)
	}
}

// One launch of twenty of one name (a layer's matmul) twice as long: the
// name's sum grows 5%, under MovedRatio; the profile keeps the launches
// apart and names the fourth alone, as the hub fed them.
func TestProfileNamesTheLaunchThatGrew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decode.profile")
	run := func(build string, slow time.Duration) (gpuspans.ProfileStatus, string) {
		log := new(gpuspanstest.Log)
		r := newGPURigLog(t, log)
		stop, err := r.h.StartProfile(gpuspans.ProfileOptions{Path: path, Build: build, Every: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		for w := 0; w < 8; w++ {
			for i := 0; i < 2*gpuspans.GPUTimeServedSpans; i++ {
				r.h.BeginStep()
				r.h.LaneBegin(1)
				for n := 1; n <= 20; n++ {
					d := 100 * us
					if n == 4 {
						d = slow
					}
					r.launch(rigMain, "mm", d)
					r.clock.Advance(5 * us)
				}
				r.h.LaneEnd(1)
				r.clock.Advance(3 * time.Millisecond)
			}
			r.clock.Advance(time.Second)
		}
		r.h.BeginStep()
		r.h.Harvest()
		stop()
		return r.h.ProfileStatus(), strings.Join(log.Lines(), "\n")
	}
	if st, log := run("v1", 100*us); st.Written.IsZero() || st.WriteErr != "" {
		t.Fatalf("v1: %+v\n%s", st, log)
	}
	p, err := profile.Read(path)
	if err != nil || len(p.Lanes) != 1 || len(p.Lanes[0].Kernels) != 1 || len(p.Lanes[0].Kernels[0].PerLaunch) != 20 {
		t.Fatalf("v1's profile: %+v, %v", p, err)
	}
	st, log := run("v2", 200*us)
	if st.Since == nil || len(st.Since.Lanes) != 1 {
		t.Fatalf("v2: %+v\n%s", st, log)
	}
	l := st.Since.Lanes[0]
	if len(l.Kernels) != 1 || l.Kernels[0].Name != "mm" || l.Kernels[0].Launch != 4 || l.Kernels[0].Change != profile.Grew || !l.Worse() {
		t.Fatalf("v2 named %+v, want mm's fourth launch grown alone", l.Kernels)
	}
	if !strings.Contains(log, "mm (launch 4) grew +100.0%") {
		t.Errorf("v2's log line:\n%s", log)
	}
}

// Too few windows: nothing compared, nothing written.
func TestProfileNeedsEnoughWindows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p")
	st, log := profileRun(t, path, "v1", "k2", 100*us, profile.MinWindows-2)
	if !st.Written.IsZero() {
		t.Fatalf("written after %d windows: %+v\n%s", st.Windows, st, log)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a profile of too few windows was written")
	}
}

// Profiles that must not be used, or not replaced.
func TestProfileHostileFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	profileRun(t, good, "v1", "k2", 100*us, 8)
	p, err := profile.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, f func(p *profile.Profile)) string {
		q := *p
		q.Lanes = append([]profile.Lane(nil), p.Lanes...)
		f(&q)
		b, _ := json.Marshal(q)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	model := write("model", func(q *profile.Profile) { q.Lanes[0].Model = "NVIDIA B200" })
	driver := write("driver", func(q *profile.Profile) { q.Lanes[0].Driver = "99.9" })
	lanes := write("lanes", func(q *profile.Profile) { q.Lanes[0].Lane = "embed" })
	raw, _ := os.ReadFile(good)
	trunc := filepath.Join(dir, "truncated")
	os.WriteFile(trunc, raw[:len(raw)/2], 0o644)
	notOurs := filepath.Join(dir, "notes.txt")
	os.WriteFile(notOurs, []byte("my notes\n"), 0o644)
	for _, c := range []struct {
		path, want string
		keep       bool // the file must stay as it was
	}{
		{model, "another device model", false},
		{driver, "another driver", false},
		{lanes, "none of this hub's lanes", false},
		{trunc, "cannot be read", false}, // a profile cut short is still one: replaced
		{notOurs, "cannot be read", true},
	} {
		before, _ := os.ReadFile(c.path)
		st, log := profileRun(t, c.path, "v2", "k2", 120*us, 8)
		if st.Since != nil || !strings.Contains(log, c.want) || !strings.Contains(st.Ignored, c.want) {
			t.Errorf("%s: compared (%+v) or not said (%q):\n%s", filepath.Base(c.path), st.Since, st.Ignored, log)
		}
		after, _ := os.ReadFile(c.path)
		if c.keep && string(after) != string(before) {
			t.Errorf("%s was replaced", filepath.Base(c.path))
		}
		if !c.keep && st.Written.IsZero() {
			t.Errorf("%s: this build's profile not written: %s", filepath.Base(c.path), st.WriteErr)
		}
	}
}

func TestStartProfileBadOptions(t *testing.T) {
	h := newGPURig(t).h
	for _, o := range []gpuspans.ProfileOptions{
		{Build: "v1"},
		{Path: "p"},
		{Path: "p", Build: "a\nb"},
		{Path: "p", Build: strings.Repeat("b", profile.MaxName+1)},
		{Path: "p", Build: "v1", Every: -time.Second},
	} {
		if _, err := h.StartProfile(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	// One profile at a time; once stopped, another may start.
	path := filepath.Join(t.TempDir(), "p")
	stop, err := h.StartProfile(gpuspans.ProfileOptions{Path: path, Build: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartProfile(gpuspans.ProfileOptions{Path: path, Build: "v2"}); err == nil || !strings.Contains(err.Error(), "kept already") {
		t.Errorf("a second profile: %v", err)
	}
	stop()
	if h.ProfileStatus().Running {
		t.Error("running after stop")
	}
	stop, err = h.StartProfile(gpuspans.ProfileOptions{Path: path, Build: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	stop()
}

// A window covers every device of the process: two GPUs of one model add
// one window to the profile, not two, with their spans together.
func TestProfileCountsAWindowOnceAcrossDevices(t *testing.T) {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	tr := sim.NewTracer()
	h, err := gpuspans.New(gpuspans.Options{
		Lanes: []string{"decode"}, Level: gpuspans.LevelKernel, Now: clock.Now,
		Logf: new(gpuspanstest.Log).Logf, KernelTracer: tr.Opener(), KernelTiming: gpuspans.KernelTimingAuto,
		KernelWindowEvery: time.Second, KernelWindowSteps: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	var gpus []*sim.GPU
	for dev := 0; dev < 2; dev++ {
		g := sim.New(sim.Options{Device: dev, Now: clock.Now, Tracer: tr})
		if err := h.Install(dev, rigMain, g.Opener()); err != nil {
			t.Fatal(err)
		}
		gpus = append(gpus, g)
	}
	path := filepath.Join(t.TempDir(), "p")
	stop, err := h.StartProfile(gpuspans.ProfileOptions{Path: path, Build: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	const windows = 6
	for w := 0; w < windows; w++ {
		for i := 0; i <= gpuspans.GPUTimeServedSpans; i++ {
			h.BeginStep()
			h.LaneBegin(0)
			for _, g := range gpus {
				g.LaunchKernel(rigMain, 100*us, "mm", 0)
			}
			clock.Advance(200 * us)
			h.LaneEnd(0)
			clock.Advance(time.Millisecond)
		}
		clock.Advance(time.Second)
	}
	h.BeginStep()
	h.Harvest()
	h.BeginStep()
	h.Harvest()
	stop()
	st := h.ProfileStatus()
	p, err := profile.Read(path)
	if err != nil {
		t.Fatalf("%v (status %+v)", err, st)
	}
	if len(p.Lanes) != 1 || st.Windows != windows || p.Lanes[0].Windows != windows || p.Lanes[0].Spans != 2*windows {
		t.Fatalf("status: %d windows; profile: %+v; want %d windows of 2 spans each, one lane", st.Windows, p.Lanes, windows)
	}
	if k := p.Lanes[0].Kernels; len(k) != 1 || k[0].Time.Mean < 99e3 || k[0].Time.Mean > 101e3 {
		t.Errorf("kernels %+v, want mm at 100 us a span", k)
	}
}
