package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sample is a small valid profile of two lanes.
func sample() *Profile {
	return buildLanes("v1.2.3", []laneSpec{
		{"NVIDIA H100 80GB HBM3", "decode", map[string]float64{"gemm<float, 128>": 400e3, "attn": 200e3, "norm": 20e3}},
		{"NVIDIA H100 80GB HBM3", "prefill", map[string]float64{"gemm<float, 128>": 4e6, "attn": 3e6}},
	}, 6, 0.03, 1)
}

func sampleBytes(t *testing.T) []byte {
	t.Helper()
	b, err := Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit returns the sample as JSON changed by f.
func edit(t *testing.T, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(sampleBytes(t), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func lane0(m map[string]any) map[string]any { return m["lanes"].([]any)[0].(map[string]any) }

func kernel0(m map[string]any) map[string]any {
	return lane0(m)["kernels"].([]any)[0].(map[string]any)
}

func TestParseRoundTrip(t *testing.T) {
	b := sampleBytes(t)
	if !bytes.Contains(b, []byte(`"name": "gemm<float, 128>"`)) || !bytes.HasPrefix(b, []byte("{\n \"format\": \"gpuspans-profile/1\",")) || !bytes.HasSuffix(b, []byte("}\n")) {
		t.Errorf("written as\n%s", b)
	}
	p, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := Marshal(p)
	if !bytes.Equal(b, b2) {
		t.Errorf("read and written again:\n%s\nwas\n%s", b2, b)
	}
	if p.Lane("NVIDIA H100 80GB HBM3", "prefill") == nil || p.Lane("NVIDIA H100 80GB HBM3", "none") != nil {
		t.Error("Lane")
	}
}

func TestParseHostile(t *testing.T) {
	lanes := func(n int) []byte {
		return edit(t, func(m map[string]any) {
			var ls []any
			for i := 0; i < n; i++ {
				ls = append(ls, map[string]any{"lane": fmt.Sprint("l", i)})
			}
			m["lanes"] = ls
		})
	}
	kernels := func(n int) []byte {
		return edit(t, func(m map[string]any) {
			var ks []any
			for i := 0; i < n; i++ {
				ks = append(ks, map[string]any{"name": fmt.Sprint("k", i)})
			}
			lane0(m)["kernels"] = ks
		})
	}
	for _, c := range []struct {
		what string
		in   []byte
		want string // in the error; "" for none
		not  bool   // errors.Is(err, ErrNotProfile)
	}{
		{"empty", nil, "not a gpuspans profile", true},
		{"text", []byte("hello\n"), "not a gpuspans profile", true},
		{"a list", []byte(`[{"format":"gpuspans-profile/1"}]`), "not a gpuspans profile", true},
		{"a string", []byte(`"gpuspans-profile/1"`), "not a gpuspans profile", true},
		{"no format", []byte(`{"build":"x","lanes":[]}`), `no "gpuspans-profile/1" format field`, true},
		{"empty format", []byte(`{"format":"","build":"x"}`), "not a gpuspans profile", true},
		{"format a number", []byte(`{"format":1,"build":"x"}`), "not a gpuspans profile", true},
		{"format in a lane only", []byte(`{"lanes":[{"format":"gpuspans-profile/1"}]}`), "not a gpuspans profile", true},
		{"broken before the format", []byte(`{"build":"x",, "format":"gpuspans-profile/1"}`), "not a gpuspans profile", true},
		{"another version", []byte(`{"format":"gpuspans-profile/2","build":"x","future":[1,2]}`), "written by another version of gpuspans", false},
		{"another format", []byte(`{"format":"pprof","build":"x"}`), `format "pprof"`, false},
		{"format last", []byte(`{"build":"x","lanes":[],"format":"gpuspans-profile/1"}`), "", false},
		{"lanes null", []byte(`{"format":"gpuspans-profile/1","build":"x","lanes":null}`), "", false},
		{"unknown fields", edit(t, func(m map[string]any) { m["later"] = map[string]any{"x": []any{1}}; lane0(m)["more"] = 1 }), "", false},
		{"trailing garbage", append(sampleBytes(t), "{}"...), "corrupt: invalid character '{' after top-level value", false},
		{"lanes an object", []byte(`{"format":"gpuspans-profile/1","build":"x","lanes":{}}`), "corrupt: lanes: not a list", false},
		{"kernels a string", edit(t, func(m map[string]any) { lane0(m)["kernels"] = "gemm" }), "corrupt: kernels in a lane: not a list", false},
		{"windows negative", edit(t, func(m map[string]any) { lane0(m)["windows"] = -1 }), "corrupt: json: cannot unmarshal number -1", false},
		{"windows a fraction", edit(t, func(m map[string]any) { lane0(m)["windows"] = 1.5 }), "corrupt:", false},
		{"a mean past float64", bytes.Replace(sampleBytes(t), []byte(`"mean": `), []byte(`"mean": 1e999`), 1), "corrupt:", false},
		{"NaN", bytes.Replace(sampleBytes(t), []byte(`"mean": `), []byte(`"mean": NaN, "x": `), 1), "corrupt: invalid character 'N'", false},
		{"a negative mean", edit(t, func(m map[string]any) { kernel0(m)["time_ns"].(map[string]any)["mean"] = -1 }), "a value of -1", false},
		{"a huge mean", edit(t, func(m map[string]any) { lane0(m)["busy_ns"].(map[string]any)["mean"] = 2e15 }), "a value of 2e+15", false},
		{"negative idle", edit(t, func(m map[string]any) { lane0(m)["idle_ns"].(map[string]any)["copy"] = -0.5 }), "a value of -0.5", false},
		{"huge launches", edit(t, func(m map[string]any) { kernel0(m)["launches"] = 1e300 }), "a value of 1e+300", false},
		{"negative m2", edit(t, func(m map[string]any) { lane0(m)["time_ns"].(map[string]any)["m2"] = -1 }), "a spread (m2) of -1", false},
		{"m2 past its n", edit(t, func(m map[string]any) { kernel0(m)["time_ns"].(map[string]any)["m2"] = 1e40 }), "a spread (m2) of 1e+40 over 6 values", false},
		{"m2 of none", edit(t, func(m map[string]any) { lane0(m)["time_ns"] = map[string]any{"n": 0, "mean": 0, "m2": 1} }), "a spread (m2) of 1 over 0 values", false},
		{"kernel in more windows than its lane", edit(t, func(m map[string]any) { kernel0(m)["time_ns"].(map[string]any)["n"] = 7 }), "in 7 windows of 6", false},
		{"lane time of more windows", edit(t, func(m map[string]any) { lane0(m)["busy_ns"].(map[string]any)["n"] = 9 }), "more values than its 6 windows", false},
		{"kernels_cut negative", edit(t, func(m map[string]any) { lane0(m)["kernels_cut"] = -2 }), "kernels_cut -2", false},
		{"a lane twice", edit(t, func(m map[string]any) { m["lanes"] = append(m["lanes"].([]any), m["lanes"].([]any)[0]) }), `lane "decode" on "NVIDIA H100 80GB HBM3" twice`, false},
		{"a kernel twice", edit(t, func(m map[string]any) { lane0(m)["kernels"] = append(lane0(m)["kernels"].([]any), kernel0(m)) }), `kernel "gemm<float, 128>" twice`, false},
		{"a lane name empty", edit(t, func(m map[string]any) { lane0(m)["lane"] = "" }), "lane 0: lane empty", false},
		{"a kernel name empty", edit(t, func(m map[string]any) { kernel0(m)["name"] = "" }), "kernel empty", false},
		{"build empty", edit(t, func(m map[string]any) { m["build"] = "" }), "build empty", false},
		{"build missing", edit(t, func(m map[string]any) { delete(m, "build") }), "build empty", false},
		{"a control character", edit(t, func(m map[string]any) { kernel0(m)["name"] = "gemm\x1b[31m" }), "has a control character", false},
		{"DEL", edit(t, func(m map[string]any) { m["host"] = "a\x7f" }), "host \"a\\x7f\" has a control character", false},
		{"a C1 control character", edit(t, func(m map[string]any) { kernel0(m)["name"] = "a\u009b31mred" }), "has a control character (U+009B)", false},
		{"a bidi override", edit(t, func(m map[string]any) { kernel0(m)["name"] = "gemm\u202enoisrev" }), "has a format character (U+202E)", false},
		{"a long name", edit(t, func(m map[string]any) { lane0(m)["model"] = strings.Repeat("H", MaxName+1) }), "model of 513 bytes, at most 512", false},
		{"a written time that is not one", edit(t, func(m map[string]any) { m["written"] = "yesterday" }), "corrupt:", false},
		{"257 lanes", lanes(MaxLanes + 1), "more than 256 lanes, at most 256", false},
		{"256 lanes", lanes(MaxLanes), "", false},
		{"the key lanes twice", []byte(`{"format":"gpuspans-profile/1","build":"x","lanes":[{"lane":"a"},{"lane":"b"}],"lanes":[{"lane":"c"}]}`), "lanes given twice", false},
		{"the key kernels twice", []byte(`{"format":"gpuspans-profile/1","build":"x","lanes":[{"lane":"a","windows":1,"kernels":[{"name":"k"}],"kernels":[{"name":"k"}]}]}`), "a lane's kernels given twice", false},
		{"65 kernels", kernels(MaxKernels + 1), "more than 64 kernels in a lane, at most 64", false},
		{"64 kernels", kernels(MaxKernels), "", false},
		{"deep", []byte(`{"format":"gpuspans-profile/1","build":"x","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "}"), "corrupt: ", false},
	} {
		p, err := Parse(c.in)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.what, err)
		case c.want == "":
			if cerr := p.Check(); cerr != nil {
				t.Errorf("%s: accepted, and Check says %v", c.what, cerr)
			}
		case err == nil:
			t.Errorf("%s: accepted, want %q", c.what, c.want)
		case !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrNotProfile) != c.not:
			t.Errorf("%s: %v; want %q (ErrNotProfile: %v)", c.what, err, c.want, c.not)
		}
	}
}

// TestParseBoundsMemory: a file of MaxBytes of empty lanes or kernels is
// refused at the first past the bound, before millions are held.
func TestParseBoundsMemory(t *testing.T) {
	const n = 5 << 20 // 15 MiB of "{},"
	many := func(prefix, suffix string) []byte {
		b := []byte(prefix)
		b = append(b, bytes.Repeat([]byte("{},"), n)...)
		b = append(b, "{}"+suffix...)
		return b
	}
	// The key "lanes" again and again, 256 lanes each.
	lanesKeys := []byte(`{"format":"gpuspans-profile/1","build":"x"`)
	for len(lanesKeys) < 15<<20 {
		lanesKeys = append(lanesKeys, `,"lanes":[`...)
		lanesKeys = append(lanesKeys, bytes.Repeat([]byte("{},"), MaxLanes-1)...)
		lanesKeys = append(lanesKeys, "{}]"...)
	}
	lanesKeys = append(lanesKeys, '}')
	for what, in := range map[string][]byte{
		"lanes again": lanesKeys,
		"lanes":       many(`{"format":"gpuspans-profile/1","build":"x","lanes":[`, "]}"),
		"kernels":     many(`{"format":"gpuspans-profile/1","build":"x","lanes":[{"lane":"a","kernels":[`, "]}]}"),
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Parse(in)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "more than") && !strings.Contains(err.Error(), "given twice") {
			t.Errorf("%s: %v", what, err)
		}
		t.Logf("%s: %d MiB allocated parsing %d MiB: %v", what, (after.TotalAlloc-before.TotalAlloc)>>20, len(in)>>20, err)
		// Decoded whole, 5M lanes of 200 bytes would be a GiB.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("%s: %d MiB allocated parsing %d MiB", what, alloc>>20, len(in)>>20)
		}
	}
}

// TestParseEveryPrefix: a profile cut anywhere is an error, never a panic;
// once its format is in, the error says corrupt, not "not a profile".
func TestParseEveryPrefix(t *testing.T) {
	b := sampleBytes(t)
	formatEnd := bytes.Index(b, []byte(Format)) + len(Format) + 1
	full := len(bytes.TrimRight(b, "\n"))
	for i := 0; i < len(b); i++ {
		p, err := Parse(b[:i])
		if i >= full {
			if err != nil {
				t.Errorf("prefix %d of %d: %v", i, len(b), err)
			}
			continue
		}
		if err == nil {
			t.Fatalf("prefix %d of %d accepted: %+v", i, len(b), p)
		}
		if i >= formatEnd && (errors.Is(err, ErrNotProfile) || !strings.HasPrefix(err.Error(), "corrupt: ")) {
			t.Fatalf("prefix %d of %d: %v", i, len(b), err)
		}
	}
}

// TestWorstCaseFits: MaxLanes lanes of MaxKernels kernels and
// MaxLaneLaunches launches kept apart, every name
// MaxName bytes that JSON escapes to twice that, every number the longest
// a float64 prints: under MaxBytes, and read back.
func TestWorstCaseFits(t *testing.T) {
	name := func(i int) string { // MaxName bytes of '"' and '\', told apart by i's bits
		var b strings.Builder
		b.WriteString(strings.Repeat(`"`, MaxName-16))
		for bit := 0; bit < 16; bit++ {
			b.WriteByte(`"\`[i>>bit&1])
		}
		return b.String()
	}
	long := 1.2345678901234567e14
	tiny := 1.2345678901234567e-7 // printed with an exponent
	st := Stat{N: 1<<64 - 1, Mean: long, M2: 1.2345678901234567e49}
	p := &Profile{Format: Format, Build: name(0), Host: strings.Repeat("\u2028", MaxName/3), Written: testTime}
	for i := 0; i < MaxLanes; i++ {
		l := Lane{Model: name(i), Driver: name(i), Lane: name(i), Windows: 1<<64 - 1, Spans: 1<<64 - 1, Time: st, Busy: st,
			Idle: Causes{tiny, tiny, tiny, tiny, tiny}, KernelsCut: 1<<63 - 1, CutBelow: tiny}
		launches := 0
		for j := 0; j < MaxKernels; j++ {
			k := Kernel{Name: name(j), Launches: tiny, Time: st}
			for ; len(k.PerLaunch) < MaxLaunches && launches < MaxLaneLaunches; launches++ {
				k.PerLaunch = append(k.PerLaunch, st)
			}
			l.Kernels = append(l.Kernels, k)
		}
		p.Lanes = append(p.Lanes, l)
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes, at most %d", len(b), MaxBytes)
	if len(b) > MaxBytes {
		t.Fatalf("the largest profile is %d bytes, more than MaxBytes (%d)", len(b), MaxBytes)
	}
	if _, err := Parse(b); err != nil {
		t.Fatal(err)
	}
}

// withTimeout runs f, failing the test if it takes 10 s (a read that
// blocks on a FIFO).
func withTimeout(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s hung", what)
		return nil
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, sampleBytes(t), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Read(ok)
	if err != nil || p.Build != "v1.2.3" || len(p.Lanes) != 2 {
		t.Fatalf("Read: %+v, %v", p, err)
	}
	link := filepath.Join(dir, "link.json")
	must(t, os.Symlink(ok, link))
	if p, err := Read(link); err != nil || p.Build != "v1.2.3" {
		t.Errorf("through a link: %v", err)
	}
	notJSON := filepath.Join(dir, "notes.txt")
	must(t, os.WriteFile(notJSON, []byte("{hello"), 0o644))
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	must(t, err)
	must(t, f.Truncate(MaxBytes+1)) // sparse: nothing to read if it were read
	must(t, f.Close())
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))
	zeroLink := filepath.Join(dir, "zero.json")
	must(t, os.Symlink("/dev/zero", zeroLink))
	dangling := filepath.Join(dir, "dangling.json")
	must(t, os.Symlink(filepath.Join(dir, "nothing"), dangling))
	for path, want := range map[string]string{
		notJSON:                          "not a gpuspans profile",
		huge:                             fmt.Sprintf("is %d bytes, more than %d", MaxBytes+1, MaxBytes),
		fifo:                             "is not a regular file",
		zeroLink:                         "is not a regular file",
		"/dev/zero":                      "is not a regular file",
		dir:                              "is not a regular file",
		dangling:                         "no such file or directory",
		filepath.Join(dir, "none.json"):  "no such file or directory",
		filepath.Join(notJSON, "x.json"): "not a directory",
	} {
		err := withTimeout(t, "Read "+path, func() error { _, err := Read(path); return err })
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "profile "+path+": ") {
			t.Errorf("Read(%s): %v, want %q", path, err, want)
		}
	}
	if _, err := Read(filepath.Join(dir, "none.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v is not fs.ErrNotExist", err)
	}
	if _, err := Read(notJSON); !errors.Is(err, ErrNotProfile) {
		t.Errorf("not a profile: %v is not ErrNotProfile", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// dirNames lists dir, to see that nothing was left behind.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	must(t, err)
	var s []string
	for _, e := range es {
		s = append(s, e.Name())
	}
	return s
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gpu.profile.json")
	p := sample()
	must(t, Write(path, p))
	got, err := os.ReadFile(path)
	must(t, err)
	want, _ := Marshal(p)
	if !bytes.Equal(got, want) {
		t.Errorf("file\n%s\nwant\n%s", got, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	back, err := Read(path)
	must(t, err)
	if b, _ := Marshal(back); !bytes.Equal(b, want) {
		t.Errorf("read back as\n%s", b)
	}
	// An older profile is replaced: another build, another format
	// version, one cut short.
	for _, old := range [][]byte{want, []byte(`{"format":"gpuspans-profile/0","anything":1}`), want[:len(want)/2], []byte(`{"format": "gpuspans-profile/1", "bu`)} {
		must(t, os.WriteFile(path, old, 0o644))
		p2 := sample()
		p2.Build = "v1.2.4"
		if err := Write(path, p2); err != nil {
			t.Errorf("replacing %.60q: %v", old, err)
			continue
		}
		if r, err := Read(path); err != nil || r.Build != "v1.2.4" {
			t.Errorf("replaced %.60q: %v", old, err)
		}
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"gpu.profile.json"}) {
		t.Errorf("left in the directory: %q", names)
	}
}

func TestWriteRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		must(t, os.WriteFile(path, b, 0o644))
		return path
	}
	notes := write("notes.json", []byte(`{"notes": "mine"}`))
	text := write("text.json", []byte("a file of mine\n"))
	empty := write("empty.json", nil)
	other := write("other.json", []byte(`{"format":"pprof-ish/1"}`))
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	must(t, err)
	must(t, f.Truncate(MaxBytes+1))
	must(t, f.Close())
	sub := filepath.Join(dir, "sub")
	must(t, os.Mkdir(sub, 0o755))
	prof := write("prof.json", sampleBytes(t))
	link := filepath.Join(dir, "link.json")
	must(t, os.Symlink(prof, link))
	fifo := filepath.Join(dir, "fifo.json")
	must(t, syscall.Mkfifo(fifo, 0o600))
	contents := func() map[string]string {
		m := map[string]string{}
		for _, path := range []string{notes, text, empty, other, prof} {
			b, err := os.ReadFile(path)
			must(t, err)
			m[path] = string(b)
		}
		return m
	}
	before := contents()
	namesBefore := dirNames(t, dir)
	for path, want := range map[string]string{
		notes:                                "not a gpuspans profile: gpuspans replaces only a profile it wrote",
		text:                                 "not a gpuspans profile",
		empty:                                "not a gpuspans profile",
		other:                                "not a gpuspans profile",
		huge:                                 "more than",
		sub:                                  "is a directory",
		link:                                 "is a symbolic link",
		fifo:                                 "is not a regular file",
		"/dev/null":                          "is not a regular file",
		filepath.Join(dir, "none", "x.json"): "cannot write in its directory",
	} {
		p := sample()
		p.Build = "intruder"
		err := withTimeout(t, "Write "+path, func() error { return Write(path, p) })
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "profile "+path) {
			t.Errorf("Write(%s): %v, want %q", path, err, want)
		}
	}
	if after := contents(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("files changed: %q\nwere %q", after, before)
	}
	if names := dirNames(t, dir); !slices.Equal(names, namesBefore) {
		t.Errorf("directory holds %q, held %q", names, namesBefore)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link is no longer one: %v", err)
	}
	// A profile Check refuses is not written, nothing created.
	bad := sample()
	bad.Lanes[0].Busy.Mean = -1
	path := filepath.Join(dir, "bad.json")
	if err := Write(path, bad); err == nil || !strings.Contains(err.Error(), "not written: lane \"decode\": a value of -1") {
		t.Errorf("a bad profile: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a bad profile left %s: %v", path, err)
	}
}

// TestWriteLooksAgain: a file put at the path while the profile was being
// written is not replaced, and the temporary file goes.
func TestWriteLooksAgain(t *testing.T) {
	defer func() { testHookBeforeCommit = nil }()
	for what, swap := range map[string]func(path string) error{
		"a file of the user's": func(path string) error { return os.WriteFile(path, []byte("mine"), 0o644) },
		"a directory":          func(path string) error { return os.Mkdir(path, 0o755) },
		"a link": func(path string) error {
			return os.Symlink(filepath.Join(filepath.Dir(path), "elsewhere"), path)
		},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "p.json")
		testHookBeforeCommit = func() { must(t, swap(path)) }
		if err := Write(path, sample()); err == nil {
			t.Errorf("%s put in meanwhile was replaced", what)
		}
		if names := dirNames(t, dir); !slices.Equal(names, []string{"p.json"}) {
			t.Errorf("%s: the directory holds %q", what, names)
		}
		if b, err := os.ReadFile(path); what == "a file of the user's" && (err != nil || string(b) != "mine") {
			t.Errorf("the user's file holds %q, %v", b, err)
		}
	}
}

// TestWriteFailsClean: a directory that cannot be written in gets no
// file, temporary or not.
func TestWriteFailsClean(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes in a read-only directory")
	}
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o555))
	defer os.Chmod(dir, 0o755)
	if err := Write(filepath.Join(dir, "p.json"), sample()); err == nil || !strings.Contains(err.Error(), "cannot write in its directory") {
		t.Errorf("a read-only directory: %v", err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("left %q", names)
	}
}
