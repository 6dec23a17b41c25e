package main

import (
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/profile"
)

// writeProfile writes the profile of windows of a decode and a prefill
// lane, decode's "attn" scaled by attn, to dir/name.
func writeTestProfile(t *testing.T, dir, name, build, model string, attn float64, windows int, seed int64) string {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	jitter := func(x float64) float64 { return x * (1 + 0.02*(2*r.Float64()-1)) }
	var b profile.Builder
	for w := 0; w < windows; w++ {
		dec := profile.WindowLane{Model: model, Driver: "13.0", Lane: "decode", Spans: 4, Idle: profile.Causes{Host: 30e3, Launch: 12e3, Wait: 5e3}}
		for _, k := range []profile.WindowKernel{{Name: "gemm<bf16, 128>", Time: 400e3, Launches: 7}, {Name: "attn", Time: 200e3 * attn, Launches: 2}, {Name: "rmsnorm", Time: 20e3, Launches: 2}} {
			k.Time = jitter(k.Time)
			dec.Kernels = append(dec.Kernels, k)
			dec.Busy += k.Time
		}
		dec.Served = dec.Busy + 47e3
		b.Add(&dec)
		pre := profile.WindowLane{Model: model, Driver: "13.0", Lane: "prefill", Spans: 1, Busy: jitter(5e6), Kernels: []profile.WindowKernel{{Name: "gemm<bf16, 128>", Time: 5e6, Launches: 40}}}
		b.Add(&pre) // never settled: no served time
	}
	path := filepath.Join(dir, name)
	if err := profile.Write(path, b.Profile(build, "gpu-7", time.Date(2026, 12, 6, 17, 54, 0, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProfileShow(t *testing.T) {
	path := writeTestProfile(t, t.TempDir(), "p.json", "v1.2.3", "NVIDIA H100 80GB HBM3", 1, 6, 1)
	code, out, errOut := runCmd("profile", "show", path)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	t.Logf("\n%s", out)
	for _, s := range []string{
		path + `: build "v1.2.3", written 2026-12-06 17:54:00 UTC on "gpu-7", 2 lanes` + "\n",
		"lane           device                     driver    windows     spans         time         busy  busy%\n",
		"decode         NVIDIA H100 80GB HBM3      13.0            6        24     66", // 620 us busy + 47 us idle
		"prefill        NVIDIA H100 80GB HBM3      13.0            6         6            -    ",
		"decode         NVIDIA H100 80GB HBM3           30.0 us      12.0 us       0.0 us       5.0 us       0.0 us\n",
		"prefill        NVIDIA H100 80GB HBM3                 -            -            -            -            -\n",
		"kernels of lane \"decode\" on NVIDIA H100 80GB HBM3, per step, the heaviest first\n        time   busy%  launches  name\n",
		"       7.0  gemm<bf16, 128>\n",
		"       2.0  attn\n",
		"       2.0  rmsnorm\n",
		"kernels of lane \"prefill\"",
		"5000.0 us  ",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	// --top cuts the list and says so.
	code, out, _ = runCmd("profile", "show", "--top", "1", path)
	if code != 0 || strings.Contains(out, "attn") || !strings.Contains(out, "  and 2 more (--top 0 lists them)\n") {
		t.Errorf("--top 1: exit %d\n%s", code, out)
	}
}

func TestProfileShowJSON(t *testing.T) {
	path := writeTestProfile(t, t.TempDir(), "p.json", "v1.2.3", "NVIDIA H100 80GB HBM3", 1, 6, 1)
	code, out, errOut := runCmd("profile", "show", path, "--json")
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || errOut != "" || out != string(file) {
		t.Errorf("exit %d, stderr %q; stdout is not the file:\n%s", code, errOut, out)
	}
	var p profile.Profile
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.Build != "v1.2.3" || len(p.Lanes) != 2 {
		t.Errorf("%v: %+v", err, p)
	}
}

func TestProfileDiff(t *testing.T) {
	dir := t.TempDir()
	before := writeTestProfile(t, dir, "before.json", "v1", "NVIDIA H100 80GB HBM3", 1, 6, 1)
	after := writeTestProfile(t, dir, "after.json", "v2", "NVIDIA H100 80GB HBM3", 1.3, 6, 2)
	same := writeTestProfile(t, dir, "same.json", "v1b", "NVIDIA H100 80GB HBM3", 1, 8, 3)
	faster := writeTestProfile(t, dir, "faster.json", "v3", "NVIDIA H100 80GB HBM3", 0.7, 6, 4)

	code, out, errOut := runCmd("profile", "diff", before, after)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	t.Logf("\n%s", out)
	for _, s := range []string{
		"before: build \"v1\"\nafter:  build \"v2\"\n",
		"decode         NVIDIA H100 80GB HBM3           6/6",
		"kernels that changed in lane \"decode\" (per step):\n  grew ",
		"  attn\n",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	if strings.Contains(out, "gemm") || strings.Contains(out, `in lane "prefill"`) {
		t.Errorf("more than attn changed")
	}

	// --fail_on_worse: 3 when worse, 0 when better or the same.
	for _, c := range []struct {
		b, a string
		code int
		out  string
	}{
		{before, after, 3, "grew"},
		{before, faster, 0, "shrank"},
		{before, same, 0, "no lane and no kernel changed"},
		{after, before, 0, "shrank"},
	} {
		code, out, errOut := runCmd("profile", "diff", "--fail_on_worse", c.b, c.a)
		if code != c.code || !strings.Contains(out, c.out) {
			t.Errorf("diff --fail_on_worse %s %s: exit %d, want %d\n%s%s", filepath.Base(c.b), filepath.Base(c.a), code, c.code, out, errOut)
		}
		if c.code == 3 && !strings.Contains(errOut, "after.json is worse than "+before+" (--fail_on_worse)") {
			t.Errorf("stderr %q", errOut)
		}
	}
}

func TestProfileDiffJSON(t *testing.T) {
	dir := t.TempDir()
	before := writeTestProfile(t, dir, "before.json", "v1", "NVIDIA H100 80GB HBM3", 1, 6, 1)
	after := writeTestProfile(t, dir, "after.json", "v2", "NVIDIA H100 80GB HBM3", 1.3, 6, 2)
	code, out, errOut := runCmd("profile", "diff", "--json", before, after)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var d profile.Diff
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if d.Before != "v1" || d.After != "v2" || len(d.Lanes) != 2 || len(d.Lanes[0].Kernels) != 1 || d.Lanes[0].Kernels[0].Name != "attn" ||
		d.Lanes[0].Kernels[0].Change != profile.Grew || !d.Worse() {
		t.Errorf("%+v", d)
	}
	// Empty lists are [], not null.
	if !strings.Contains(out, `"kernels": []`) {
		t.Errorf("prefill's kernels:\n%s", out)
	}
	code, out, _ = runCmd("profile", "diff", "--json", "--min_windows", "7", before, after)
	if code != 0 || !strings.Contains(out, `"lanes": []`) || !strings.Contains(out, `6 and 6 windows, comparing needs 7`) {
		t.Errorf("--min_windows 7: exit %d\n%s", code, out)
	}
}

func TestProfileDiffOptions(t *testing.T) {
	dir := t.TempDir()
	h100 := writeTestProfile(t, dir, "h100.json", "v1", "NVIDIA H100 80GB HBM3", 1, 6, 1)
	h200 := writeTestProfile(t, dir, "h200.json", "v1", "NVIDIA H200", 0.6, 6, 2)
	few := writeTestProfile(t, dir, "few.json", "v2", "NVIDIA H100 80GB HBM3", 1, 3, 3)

	// Two machines: without --any_model nothing is compared.
	code, out, errOut := runCmd("profile", "diff", h100, h200)
	if code != 0 || !strings.Contains(out, "no lane compared") || !strings.Contains(out, `not compared: lane "decode" on NVIDIA H200: only in build "v1"`) ||
		!strings.Contains(errOut, "no lane compared (4 not: see why in the output)") {
		t.Errorf("across models: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd("profile", "diff", "--any_model", h100, h200)
	if code != 0 || errOut != "" || !strings.Contains(out, `lane "decode": before on NVIDIA H100 80GB HBM3, after on NVIDIA H200`) || !strings.Contains(out, "shrank") {
		t.Errorf("--any_model: exit %d\n%s%s", code, out, errOut)
	}
	// Too few windows, then enough for --min_windows 3.
	code, out, _ = runCmd("profile", "diff", h100, few)
	if code != 0 || !strings.Contains(out, "6 and 3 windows, comparing needs 5") {
		t.Errorf("few windows: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd("profile", "diff", "--min_windows=3", "--fail_on_worse", h100, few)
	if code != 0 || !strings.Contains(out, "6/3") || !strings.Contains(out, "no lane and no kernel changed") {
		t.Errorf("--min_windows 3: exit %d\n%s", code, out)
	}
}

// TestProfileBadFiles: a file that cannot be read as a profile exits 1,
// the message naming the file and why, without hanging on a FIFO.
func TestProfileBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeTestProfile(t, dir, "good.json", "v1", "NVIDIA H100", 1, 6, 1)
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	trace := write("trace.json", `{"traceEvents":[]}`)
	text := write("notes.txt", "hello")
	cut := write("cut.json", `{"format": "gpuspans-profile/1", "build": "v`)
	newer := write("newer.json", `{"format": "gpuspans-profile/2", "build": "v9"}`)
	bad := write("bad.json", `{"format": "gpuspans-profile/1", "build": "v", "lanes": [{"lane": "x", "busy_ns": {"mean": -1}}]}`)
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")
	for path, want := range map[string]string{
		trace:   `profile ` + trace + `: not a gpuspans profile (no "gpuspans-profile/1" format field)`,
		text:    `profile ` + text + `: not a gpuspans profile`,
		cut:     `profile ` + cut + `: corrupt: unexpected end of JSON input`,
		newer:   `profile ` + newer + `: format "gpuspans-profile/2", want "gpuspans-profile/1" (written by another version of gpuspans)`,
		bad:     `profile ` + bad + `: lane "x": a value of -1`,
		fifo:    `profile ` + fifo + `: is not a regular file`,
		dir:     `profile ` + dir + `: is not a regular file`,
		missing: `profile ` + missing + `: stat ` + missing + `: no such file or directory`,
	} {
		for _, args := range [][]string{{"profile", "show", path}, {"profile", "show", "--json", path}, {"profile", "diff", good, path}, {"profile", "diff", path, good}} {
			done := make(chan struct{})
			var code int
			var out, errOut string
			go func() { code, out, errOut = runCmd(args...); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%q hung", args)
			}
			if code != 1 || out != "" || !strings.Contains(errOut, "gpuspans profile "+args[1]+": "+want) {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want 1 and %q", args, code, out, errOut, want)
			}
		}
	}
	// Both files bad: both named.
	code, _, errOut := runCmd("profile", "diff", text, missing)
	if code != 1 || !strings.Contains(errOut, text) || !strings.Contains(errOut, missing) {
		t.Errorf("two bad files: exit %d, %q", code, errOut)
	}
}

func TestProfileUsage(t *testing.T) {
	dir := t.TempDir()
	good := writeTestProfile(t, dir, "good.json", "v1", "NVIDIA H100", 1, 6, 1)
	checkUsage(t, []usageCase{
		{[]string{"help"}, 0, "gpuspans profile diff BEFORE AFTER\n", ""},
		{[]string{"profile"}, 2, "", "profile: want show or diff (see gpuspans profile --help)"},
		{[]string{"profile", "--help"}, 0, "Usage: gpuspans profile show FILE | gpuspans profile diff BEFORE AFTER", ""},
		{[]string{"profile", "help"}, 0, "with --fail_on_worse, 3 when a lane got worse", ""},
		{[]string{"profile", "list"}, 2, "", `profile: unknown subcommand "list": want show or diff`},
		{[]string{"profile", "--json", good}, 2, "", `unknown subcommand "--json"`},
		{[]string{"profile", "show"}, 2, "", "profile show: want one profile file, got 0 arguments (see gpuspans profile show --help)"},
		{[]string{"profile", "show", good, good}, 2, "", "want one profile file, got 2 arguments"},
		{[]string{"profile", "show", "--help"}, 0, "Usage: gpuspans profile show [--json] [--top N] FILE", ""},
		{[]string{"profile", "show", "-h"}, 0, "  --top int\n", ""},
		{[]string{"profile", "show", "--top=-1", good}, 2, "", "--top -1: want 0 (all) or more"},
		{[]string{"profile", "show", "--top=x", good}, 2, "", `profile show: invalid value "x" for flag --top`},
		{[]string{"profile", "show", "--any_model", good}, 2, "", "flag provided but not defined: --any_model\nRun \"gpuspans profile show --help\" for its flags."},
		{[]string{"profile", "diff"}, 2, "", "profile diff: want two profile files, BEFORE and AFTER, got 0 arguments"},
		{[]string{"profile", "diff", good}, 2, "", "got 1 arguments"},
		{[]string{"profile", "diff", good, good, good}, 2, "", "got 3 arguments"},
		{[]string{"profile", "diff", "--help"}, 0, "  --fail_on_worse\n", ""},
		{[]string{"profile", "diff", "--help"}, 0, "  --min_windows uint\n    \twindows a lane needs in both profiles to be compared (default 5)", ""},
		{[]string{"profile", "diff", "--min_windows=0", good, good}, 2, "", "--min_windows 0: want 1 or more"},
		{[]string{"profile", "diff", "--min_windows=-1", good, good}, 2, "", `invalid value "-1" for flag --min_windows`},
		{[]string{"profile", "diff", "--top=3", good, good}, 2, "", "flag provided but not defined: --top"},
		{[]string{"profile", "diff", good, good}, 0, "no lane and no kernel changed", ""},
		{[]string{"profile", "diff", good, "--json", good}, 0, `"before": "v1"`, ""},
		{[]string{"profile", "diff", "--fail_on_worse", good, good}, 0, "no lane and no kernel changed", ""},
	})
}

func TestProfileCommandName(t *testing.T) {
	defer func(n string) { cmdName = n }(cmdName)
	cmdName = commandName("tools/gpuspans.sh")
	for _, args := range [][]string{{"profile", "--help"}, {"profile", "diff", "--help"}, {"help"}} {
		code, out, _ := runCmd(args...)
		if code != 0 || !strings.Contains(out, "tools/gpuspans.sh profile diff") || strings.Contains(strings.ReplaceAll(out, "tools/gpuspans.sh", ""), "gpuspans profile") {
			t.Errorf("%q: exit %d\n%s", args, code, out)
		}
	}
	if _, _, errOut := runCmd("profile", "show"); !strings.Contains(errOut, "see tools/gpuspans.sh profile show --help") {
		t.Errorf("hint %q", errOut)
	}
}
