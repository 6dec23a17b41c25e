package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/export/spanfile"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

func runCmd(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// usageCase is a command line and what it must give: its exit status, and
// text its standard output and error contain.
type usageCase struct {
	args           []string
	code           int
	stdout, stderr string
}

// checkUsage runs each case.
func checkUsage(t *testing.T, cases []usageCase) {
	t.Helper()
	for _, c := range cases {
		code, out, errOut := runCmd(c.args...)
		if code != c.code || !strings.Contains(out, c.stdout) || !strings.Contains(errOut, c.stderr) {
			t.Errorf("gpuspans %q: exit %d, stdout %.300q, stderr %.300q; want %d, %q, %q", c.args, code, out, errOut, c.code, c.stdout, c.stderr)
		}
	}
}

func TestUsage(t *testing.T) {
	checkUsage(t, []usageCase{
		{nil, 2, "", "Usage:"},
		{[]string{"help"}, 0, "gpuspans demo [flags]", ""},
		{[]string{"--help"}, 0, "gpuspans trace summary FILE", ""},
		{[]string{"serve"}, 2, "", `unknown command "serve"`},
		{[]string{"demo", "--help"}, 0, "  --kernel_span_every int", ""},
		{[]string{"demo", "--help"}, 0, "/control/sim", ""},
		{[]string{"demo", "--duration=10"}, 2, "", `invalid value "10" for flag --duration: want a number with a unit: 10s`},
		{[]string{"demo", "--nope"}, 2, "", "flag provided but not defined: --nope"},
		{[]string{"demo", "-h"}, 0, "Usage: gpuspans demo [flags]", ""},
		{[]string{"demo", "--rate=fast"}, 2, "", "invalid value"},
		{[]string{"demo", "--level=loud"}, 2, "", "unknown level"},
		{[]string{"demo", "--prefill=attn"}, 2, "", "want name=duration"},
		{[]string{"demo", "extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"trace", "--help"}, 0, "gpuspans trace summary FILE", ""},
		{[]string{"trace"}, 2, "", "want one span file"},
		{[]string{"trace", "a", "b"}, 2, "", "want one span file"},
		{[]string{"bench", "--help"}, 0, "the machine report", ""},
		{[]string{"bench", "now"}, 2, "", "unexpected argument"},
	})
}

func TestCommandName(t *testing.T) {
	defer func(n string) { cmdName = n }(cmdName)
	cmdName = commandName(" tools/gpuspans.sh ")
	for _, c := range []struct {
		args []string
		out  string
	}{
		{[]string{"help"}, "  tools/gpuspans.sh trace summary FILE "},
		{[]string{"help"}, `Run "tools/gpuspans.sh COMMAND --help"`},
		{[]string{"demo", "--help"}, "Usage: tools/gpuspans.sh demo [flags]"},
		{[]string{"trace", "--help"}, `"tools/gpuspans.sh trace summary FILE"`},
	} {
		if code, out, _ := runCmd(c.args...); code != 0 || !strings.Contains(out, c.out) {
			t.Errorf("%q: exit %d, stdout %q; want %q", c.args, code, out, c.out)
		}
	}
	if _, _, errOut := runCmd("demo", "--rate=x"); !strings.Contains(errOut, `Run "tools/gpuspans.sh demo --help"`) {
		t.Errorf("hint: %q", errOut)
	}
	if commandName("") != "gpuspans" {
		t.Errorf("commandName(\"\") = %q", commandName(""))
	}
}

// TestTraceOfJSONSaysSo: a trace given where a span file belongs fails
// with a message that says what it is.
func TestTraceOfJSONSaysSo(t *testing.T) {
	f := filepath.Join(t.TempDir(), "gpuspans-trace.json")
	if err := os.WriteFile(f, []byte(`{"traceEvents":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"trace", "summary", f}, {"trace", "-o", "-", f}} {
		code, _, errOut := runCmd(args...)
		if code != 1 || !strings.Contains(errOut, "is JSON: a timeline trace") || !strings.Contains(errOut, "demo --spans FILE") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
	if !looksLikeJSON([]byte(" \n[{")) || looksLikeJSON([]byte{0x0d, 0x0a}) || looksLikeJSON(nil) {
		t.Error("looksLikeJSON")
	}
}

// TestTraceSummaryOfNoSpanFile: a file of which no record reads gets the
// error alone, not a table of nothing before it.
func TestTraceSummaryOfNoSpanFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(f, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd("trace", "summary", f)
	if code != 1 || out != "" || !strings.Contains(errOut, "no record could be read: is it a span file?") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// writeSpanFile writes the spans of a short simulated run.
func writeSpanFile(t *testing.T) string {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	stream := gpu.NewStream()
	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, StartTimes: gpuspans.StartTimesAlways, Now: clock.Now, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Install(0, stream, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	if err := hub.RegisterKernel(1, "attn"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		hub.BeginStep()
		hub.LaneBegin(1)
		sp := hub.KernelBegin(1, stream)
		gpu.Launch(stream, 300*time.Microsecond)
		hub.KernelEnd(sp)
		hub.LaneEnd(1)
		clock.Advance(time.Millisecond)
	}
	hub.Harvest()
	path := filepath.Join(t.TempDir(), "run.spans")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := spanfile.NewWriter(f, spanfile.Options{}).WriteSpans("test", hub.RecentSpans(0, nil)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTrace(t *testing.T) {
	in := writeSpanFile(t)
	code, out, errOut := runCmd("trace", in)
	want := strings.TrimSuffix(in, ".spans") + ".trace.json"
	if code != 0 || !strings.Contains(out, "40 spans written to "+want) {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	var tr struct {
		TraceEvents []map[string]interface{} `json:"traceEvents"`
	}
	raw, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &tr); err != nil || len(tr.TraceEvents) < 40 {
		t.Errorf("trace: %v, %d events", err, len(tr.TraceEvents))
	}
	// Flags after the file, and "-" for standard output.
	code, out, _ = runCmd("trace", in, "-o", "-")
	if code != 0 || !strings.HasPrefix(out, `{"traceEvents":[`) {
		t.Errorf("trace -o -: exit %d, %.60q", code, out)
	}
}

func TestTraceSummary(t *testing.T) {
	in := writeSpanFile(t)
	for _, args := range [][]string{{"trace", "summary", in}, {"trace", "--summary", in}, {"trace", in, "--summary"}} {
		code, out, errOut := runCmd(args...)
		if code != 0 || !strings.Contains(out, "40 spans") || !strings.Contains(out, "lane    decode     20  300us  300us  300us") {
			t.Errorf("%q: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

func TestTraceBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.spans")
	if err := os.WriteFile(bad, []byte("not a span file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd("trace", "summary", bad); code != 1 || !strings.Contains(errOut, "spanfile") {
		t.Errorf("summary of junk: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCmd("trace", bad, "-o", filepath.Join(t.TempDir(), "x.json")); code != 1 || !strings.Contains(errOut, "spanfile") {
		t.Errorf("trace of junk: exit %d, %q", code, errOut)
	}
	if code, _, _ := runCmd("trace", filepath.Join(t.TempDir(), "missing.spans")); code != 1 {
		t.Errorf("trace of a missing file: exit %d", code)
	}
	// -o naming the input must not empty it.
	in := writeSpanFile(t)
	before, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd("trace", in, "-o", in); code != 2 || !strings.Contains(errOut, "is the input file") {
		t.Errorf("trace -o input: exit %d, %q", code, errOut)
	}
	if after, err := os.ReadFile(in); err != nil || len(after) != len(before) {
		t.Errorf("input changed: %d bytes, was %d (%v)", len(after), len(before), err)
	}
}

func TestDemoCommand(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.json")
	spans := filepath.Join(dir, "s.spans")
	code, out, errOut := runCmd("demo", "--backend=sim", "--steps=40", "--rate=0", "--listen=", "--trace="+trace, "--spans="+spans,
		"--prefill=a=20us", "--decode=b=10us", "--graph=", "--kernel_span_every=2")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if !strings.HasPrefix(out, "gpuspans demo: using the simulated GPU") {
		t.Errorf("first line: %.100q", out)
	}
	for _, s := range []string{"stopped (--steps) after 40 steps", "lane    prefill", "kernel  a"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	// The span file's summary is the table the demo printed.
	code, sum, _ := runCmd("trace", "summary", spans)
	table := sum[strings.Index(sum, "\n")+1:]
	if code != 0 || !strings.Contains(out, table) {
		t.Errorf("trace summary (exit %d)\n%s\nis not the demo's table\n%s", code, table, out)
	}
}

// A profile is made of kernel windows: --profile turns them on, or says
// at start that none will be written where --kernel_timing events keeps
// them off.
func TestDemoProfileNeedsWindows(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--profile: kernel timing auto"},
		{[]string{"--kernel_timing=events"}, "no profile will be written"},
	} {
		args := append([]string{"demo", "--backend=sim", "--steps=5", "--rate=0", "--listen=", "--trace=",
			"--profile=" + filepath.Join(dir, "p.profile"), "--build=v1"}, c.args...)
		code, out, errOut := runCmd(args...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output lacks %q:\n%s%s", c.args, code, c.want, out, errOut)
		}
	}
	// Whose GPU time with tenants: said at start, and its line at exit.
	code, out, errOut := runCmd("demo", "--backend=sim", "--steps=100", "--rate=0", "--listen=", "--trace=", "--tenants=2")
	if code != 0 || !strings.Contains(out, "from 2 tenants") || !strings.Contains(out, "whose GPU time (cost model:") || !strings.Contains(out, "t2 ") {
		t.Errorf("--tenants=2: exit %d\n%s%s", code, out, errOut)
	}
}

func TestDemoRefusesPublicListenWithoutToken(t *testing.T) {
	t.Setenv("GPUSPANS_TOKEN", "")
	code, _, errOut := runCmd("demo", "--backend=sim", "--steps=1", "--listen=0.0.0.0:0", "--trace=")
	if code != 1 || !strings.Contains(errOut, "not a loopback address") || !strings.Contains(errOut, "--token_file") {
		t.Errorf("exit %d, %q", code, errOut)
	}
	t.Setenv("GPUSPANS_TOKEN", "from-env")
	if code, out, errOut := runCmd("demo", "--backend=sim", "--steps=1", "--listen=0.0.0.0:0", "--trace="); code != 0 {
		t.Errorf("with GPUSPANS_TOKEN: exit %d\n%s%s", code, out, errOut)
	}
}

func TestBenchCommand(t *testing.T) {
	code, out, errOut := runCmd("bench", "--backend=none", "--benchtime=1ms", "--harvest_spans=16", "--harvest_rounds=1")
	if code != 0 || !strings.Contains(out, "enabled/kernel-span/nop") || !strings.Contains(errOut, "measuring harvest/sim") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

func TestParseFlagsDoubleDash(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  string
		out  string
	}{
		{[]string{"a", "-o", "x"}, "a", "x"},
		{[]string{"--", "a", "-o", "x"}, "a -o x", ""},
		{[]string{"-o", "x", "a", "--", "-b"}, "a -b", "x"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		out := fs.String("o", "", "")
		pos, code, ok := parseFlags(fs, tc.args, io.Discard, io.Discard)
		if !ok || code != 0 || strings.Join(pos, " ") != tc.pos || *out != tc.out {
			t.Errorf("%q: pos %q -o %q (ok %v code %d), want %q -o %q", tc.args, pos, *out, ok, code, tc.pos, tc.out)
		}
	}
}

// TestTraceOutputSafety: the output is never emptied before the input is
// read, never the input, and never anything but a regular file.
func TestTraceOutputSafety(t *testing.T) {
	dir := t.TempDir()
	in := writeSpanFile(t)
	before, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	// trace -o F - < F
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdin := os.Stdin
	os.Stdin = f
	code, _, errOut := runCmd("trace", "-o", in, "-")
	os.Stdin = stdin
	if code != 2 || !strings.Contains(errOut, "is the input file") {
		t.Errorf("trace -o F - < F: exit %d, %q", code, errOut)
	}
	if after, _ := os.ReadFile(in); !bytes.Equal(after, before) {
		t.Errorf("the input changed: %d bytes, was %d", len(after), len(before))
	}
	// trace -o OUT bad-input leaves OUT as it was.
	out := filepath.Join(dir, "out.json")
	if err := os.WriteFile(out, []byte("an older trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.spans")
	if err := os.WriteFile(bad, []byte("not a span file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd("trace", "-o", out, bad); code != 1 || !strings.Contains(errOut, "left as it was") {
		t.Errorf("trace -o OUT junk: exit %d, %q", code, errOut)
	}
	if b, _ := os.ReadFile(out); string(b) != "an older trace" {
		t.Errorf("OUT changed: %q", b)
	}
	// Not a regular file, or a link: refused.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(out, link); err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{"/dev/null", link, dir} {
		if code, _, errOut := runCmd("trace", "-o", o, in); code != 2 || !strings.Contains(errOut, "-o "+o) {
			t.Errorf("trace -o %s: exit %d, %q", o, code, errOut)
		}
	}
	if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("/dev/null is no longer a device")
	}
	// A good conversion replaces OUT.
	if code, _, errOut := runCmd("trace", "-o", out, in); code != 0 {
		t.Errorf("trace -o OUT: exit %d, %q", code, errOut)
	}
	if b, _ := os.ReadFile(out); !json.Valid(b) {
		t.Errorf("OUT is not the trace: %.100q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestDemoOutputsSameFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	code, _, errOut := runCmd("demo", "--backend=sim", "--steps=1", "--listen=", "--trace="+f, "--spans="+f)
	if code != 1 || !strings.Contains(errOut, "are the same file") {
		t.Errorf("exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(f); !os.IsNotExist(err) {
		t.Errorf("created %s: %v", f, err)
	}
}

func TestDemoToken(t *testing.T) {
	t.Setenv("GPUSPANS_TOKEN", "")
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	blank := filepath.Join(dir, "blank")
	if err := os.WriteFile(blank, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo") // reading it would wait for a writer for good
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("k"), 5<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link") // secrets are mounted as links: followed
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--token= "}, 2, "blank"},
		{[]string{"--token=a b"}, 2, "white space"},
		{[]string{"--token=a\tb"}, 2, "white space"},
		{[]string{"--token=a\x01b"}, 2, "control character"},
		{[]string{"--token_file=" + blank}, 2, "is empty"},
		{[]string{"--token_file=" + filepath.Join(dir, "missing")}, 2, "--token_file"},
		{[]string{"--token=x", "--token_file=" + file}, 2, "give one"},
		{[]string{"--token_file=" + fifo}, 2, "is not a regular file"},
		{[]string{"--token_file=/dev/zero"}, 2, "/dev/zero is not a regular file"},
		{[]string{"--token_file=" + big}, 2, "more than 4096"},
		{[]string{"--token_file=" + link, "--listen=0.0.0.0:0"}, 0, ""},
		{[]string{"--protect_reads"}, 1, "no token to require"},
		{[]string{"--token_file=" + file, "--listen=0.0.0.0:0", "--protect_reads"}, 0, ""},
	} {
		args := append([]string{"demo", "--backend=sim", "--steps=1", "--trace=", "--listen="}, c.args...)
		code, out, errOut := runCmd(args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, %q\n%s", c.args, code, errOut, out)
		}
	}
	// From the environment.
	t.Setenv("GPUSPANS_TOKEN", " ")
	if code, _, errOut := runCmd("demo", "--backend=sim", "--steps=1", "--trace=", "--listen=0.0.0.0:0"); code != 2 || !strings.Contains(errOut, "GPUSPANS_TOKEN") {
		t.Errorf("blank GPUSPANS_TOKEN: exit %d, %q", code, errOut)
	}
}

func TestDemoFlagValues(t *testing.T) {
	for _, c := range []struct {
		flag string
		code int
		want string
	}{
		{"--rate=NaN", 1, "rate NaN"},
		{"--rate=Inf", 1, "rate +Inf"},
		{"--rate=1e-300", 1, "rate 1e-300"},
		{"--rate=-1", 1, "rate -1"},
		{"--jitter=NaN", 1, "jitter NaN"},
		{"--jitter=-0.1", 1, "jitter -0.1"},
		{"--status_every=-1", 0, ""},
		{"--status_every=-1s", 0, ""},
		{"--status_every=0.01", 0, ""},
		{"--status_every=soon", 2, "status_every"},
		{"--otlp=collector:4318", 1, `otlp: endpoint "collector:4318": scheme "collector", want http://`},
		{"--otlp=http://collector", 1, "has no port"},
		{"--otlp=http://collector:99999", 1, `port "99999", want 1..65535`},
		{"--otlp=http://collector:4317/v1/traces --otlp_protocol=grpc", 1, `otlp: endpoint "http://collector:4317/v1/traces": a gRPC endpoint has no path`},
		{"--otlp_protocol=udp", 1, `otlp_protocol "udp": want grpc or http/protobuf`},
		{"--otlp_sample_every=0", 1, "otlp_sample_every 0: want 1..1048576"},
		{"--requests=100000", 1, "requests 100000: want 1..1024"},
		{"--kernel_timing=nvtx", 2, `kernel timing "nvtx": want events, auto, cupti or attached`},
		{"--metric_labels=model_name=llama,region=eu", 0, ""},
		{"--metric_labels=lane=x", 1, `metric_labels: constant label name "lane"`},
		{"--metric_labels=model", 2, `"model": want name=value`},
		{"--metric_labels=model=", 1, "metric_labels: constant label model: empty value"},
	} {
		code, out, errOut := runCmd(append([]string{"demo", "--backend=sim", "--steps=2", "--trace=", "--listen="}, strings.Fields(c.flag)...)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, %q\n%s", c.flag, code, errOut, out)
		}
	}
	// The simulator has a kernel tracer of its own: windows open on it.
	if code, out, errOut := runCmd("demo", "--backend=sim", "--steps=2", "--trace=", "--listen=", "--kernel_timing=auto"); code != 0 ||
		strings.Contains(out+errOut, "event pairs") {
		t.Errorf("--kernel_timing=auto on the simulator: exit %d, %q\n%s", code, errOut, out)
	}
	// --status_every -1, as two arguments.
	if code, _, errOut := runCmd("demo", "--backend=sim", "--steps=2", "--trace=", "--listen=", "--status_every", "-1"); code != 0 {
		t.Errorf("--status_every -1: exit %d, %q", code, errOut)
	}
}

// Out-of-range bench flags are refused by name, not replaced by defaults.
func TestBenchFlagValues(t *testing.T) {
	for _, c := range []struct{ flag, want string }{
		{"--benchtime=-1s", "--benchtime -1s"},
		{"--benchtime=0s", "--benchtime 0s"},
		{"--harvest_spans=-5", "--harvest_spans -5: want 1..1048576"},
		{"--harvest_spans=0", "--harvest_spans 0"},
		{"--harvest_spans=99999999", "--harvest_spans 99999999"},
		{"--harvest_rounds=-1", "--harvest_rounds -1"},
		{"--device=-1", "--device -1: want 0..63"},
	} {
		code, _, errOut := runCmd("bench", "--backend=none", c.flag)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, %q", c.flag, code, errOut)
		}
	}
}

func TestBadFlagIsShort(t *testing.T) {
	code, _, errOut := runCmd("demo", "--no_such_flag")
	if code != 2 || !strings.Contains(errOut, "no_such_flag") || !strings.Contains(errOut, "gpuspans demo --help") {
		t.Errorf("exit %d, %q", code, errOut)
	}
	if n := strings.Count(errOut, "\n"); n > 2 {
		t.Errorf("%d lines after a bad flag:\n%s", n, errOut)
	}
}
