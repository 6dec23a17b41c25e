//go:build cgo

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/debugpage"
	"github.com/gpuspans/gpuspans/go/internal/optname"
)

// An option as each surface spells one value of it.
type optionCase struct {
	field string
	goVal interface{} // the value of the gpuspans.Options field
	c     string      // the argument value testdata/options.c sets, C's spelling
	py    interface{} // the Python keyword's value, as JSON
	bad   string      // a value out of bounds in C's spelling ("" for none); -1 in Python for ints and durations
}

// optionCases gives every gpuspans.Options field that holds data (the
// functions and pointers, Logf, Now, KernelTracer and StateMirror, are Go's
// alone) a value other than its default, in each surface's spelling. A
// field of a type it does not know fails the test: a new option must be
// taught here, and then through hub.h, options.c and Python's Hub.
func optionCases(t *testing.T) []optionCase {
	var cases []optionCase
	typ := reflect.TypeOf(gpuspans.Options{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if k := f.Type.Kind(); k == reflect.Func || k == reflect.Ptr {
			continue
		}
		c := optionCase{field: f.Name}
		switch f.Type {
		case reflect.TypeOf([]string(nil)):
			c.goVal, c.c, c.py = []string{"a", "b", "c"}, "a,b,c", []string{"a", "b", "c"}
		case reflect.TypeOf(0):
			c.goVal, c.c, c.py, c.bad = 7, "7", 7, "-1"
		case reflect.TypeOf(time.Duration(0)):
			c.goVal, c.c, c.py, c.bad = 3*time.Second, "3000000000", 3.0, "-1"
		case reflect.TypeOf(false):
			c.goVal, c.c, c.py = true, "1", true
		case reflect.TypeOf(0.0):
			c.goVal, c.c, c.py, c.bad = 5e14, "5e14", 5e14, "-1"
		case reflect.TypeOf(gpuspans.Level(0)):
			c.goVal, c.c, c.py, c.bad = gpuspans.LevelStep, strconv.Itoa(int(gpuspans.LevelStep)), "step", "9"
		case reflect.TypeOf(gpuspans.KernelTiming(0)):
			c.goVal, c.c, c.py, c.bad = gpuspans.KernelTimingCUPTI, strconv.Itoa(int(gpuspans.KernelTimingCUPTI)), "cupti", "9"
		case reflect.TypeOf(gpuspans.StartTimes(0)):
			c.goVal, c.c, c.py, c.bad = gpuspans.StartTimesAlways, strconv.Itoa(int(gpuspans.StartTimesAlways)), "always", "9"
		default:
			t.Fatalf("Options.%s is a %v, which TestOptionsAgree has no value for: teach it, and each surface", f.Name, f.Type)
		}
		cases = append(cases, c)
	}
	if len(cases) < 11 {
		t.Fatalf("%d options with data; Options has more", len(cases))
	}
	return cases
}

// goOptions is the "options" object of the snapshot JSON of a Go hub made
// with field set to val ("" field: every default).
func goOptions(t *testing.T, field string, val interface{}) map[string]interface{} {
	t.Helper()
	o := gpuspans.Options{Logf: t.Logf, KernelTracer: func(backend.TracerMode) (backend.KernelTracer, error) {
		return nil, fmt.Errorf("no tracer in this test")
	}}
	if field != "" {
		reflect.ValueOf(&o).Elem().FieldByName(field).Set(reflect.ValueOf(val))
	}
	h, err := gpuspans.New(o)
	if err != nil {
		t.Fatalf("gpuspans.New with %s %v: %v", field, val, err)
	}
	snap := h.Snapshot()
	b, err := debugpage.MarshalSnapshot(&snap, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return optionsOf(t, b)
}

func optionsOf(t *testing.T, snapshotJSON []byte) map[string]interface{} {
	t.Helper()
	var s struct {
		Options map[string]interface{} `json:"options"`
	}
	if err := json.Unmarshal(snapshotJSON, &s); err != nil || s.Options == nil {
		t.Fatalf("no options in the snapshot (%v): %.300s", err, snapshotJSON)
	}
	return s.Options
}

// TestOptionsAgree walks every option through Go, C and Python: each
// surface sets it by the name it spells it with (go/internal/optname: the
// field in snake case, _ns after a duration in C) at create, and the hub's
// snapshot must say what the Go hub made with the same value says; a value
// out of bounds is refused with a message that names the option as that
// surface spells it. The command's flags are held to the same names in
// go/cmd/gpuspans (TestHubFlagsCoverOptions).
func TestOptionsAgree(t *testing.T) {
	cases := optionCases(t)
	exe := compile(t, "gcc", library(t, "c-archive"), "options", "testdata/options.c")
	cRun := func(args ...string) (string, bool) {
		out, err := exec.Command(exe, args...).CombinedOutput()
		if err != nil && !strings.HasPrefix(string(out), "ERROR ") {
			t.Fatalf("options %v: %v\n%s", args, err, out)
		}
		return string(out), err == nil
	}

	// Python: one process makes a hub per case and prints one line each.
	type pyCase struct {
		Kw    string      `json:"kw,omitempty"`
		Value interface{} `json:"value"`
	}
	pyCases := []pyCase{{}}
	for _, c := range cases {
		pyCases = append(pyCases, pyCase{optname.Snake(c.field), c.py})
		if c.bad == "-1" {
			pyCases = append(pyCases, pyCase{optname.Snake(c.field), -1})
		}
	}
	var pyOut []map[string]interface{}
	if py, err := exec.LookPath("python3"); err == nil {
		in, _ := json.Marshal(pyCases)
		cmd := exec.Command(py, "-c", `
import json, sys
import gpuspans
for c in json.load(sys.stdin):
    try:
        with gpuspans.Hub(quiet=True, **({c["kw"]: c["value"]} if c.get("kw") else {})) as hub:
            print(json.dumps({"options": hub.snapshot()["options"]}))
    except (gpuspans.Error, ValueError, TypeError) as e:
        print(json.dumps({"error": str(e)}))
`)
		cmd.Dir = "../../python"
		cmd.Env = append(os.Environ(), "GPUSPANS_LIB="+library(t, "c-shared"), "GPUSPANS_HOT=off", "PYTHONPATH=.", "PYTHONDONTWRITEBYTECODE=1")
		cmd.Stdin = strings.NewReader(string(in))
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python: %v\n%s", err, b)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]interface{}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("python printed %q: %v", line, err)
			}
			pyOut = append(pyOut, m)
		}
		if len(pyOut) != len(pyCases) {
			t.Fatalf("python printed %d results for %d cases:\n%s", len(pyOut), len(pyCases), b)
		}
	} else {
		t.Log("python3 not found: Python's side not walked")
	}
	next := 0
	py := func() map[string]interface{} {
		if pyOut == nil {
			return nil
		}
		next++
		return pyOut[next-1]
	}

	// Every default first, then one option at a time.
	want := goOptions(t, "", nil)
	out, _ := cRun()
	if got := optionsOf(t, []byte(out)); !reflect.DeepEqual(got, want) {
		t.Errorf("defaults: C's hub runs with\n%v\nGo's with\n%v", got, want)
	}
	if p := py(); p != nil && !reflect.DeepEqual(p["options"], want) {
		t.Errorf("defaults: Python's hub runs with\n%v\nGo's with\n%v", p["options"], want)
	}
	for _, c := range cases {
		name, kw := cName(c.field), optname.Snake(c.field)
		want := goOptions(t, c.field, c.goVal)
		if reflect.DeepEqual(want, goOptions(t, "", nil)) {
			t.Errorf("Options.%s = %v reads as the default: pick another value", c.field, c.goVal)
		}
		out, ok := cRun(name + "=" + c.c)
		if !ok {
			t.Errorf("C: %s=%s refused: %s", name, c.c, out)
		} else if got := optionsOf(t, []byte(out)); !reflect.DeepEqual(got, want) {
			t.Errorf("C: %s=%s: the hub runs with\n%v\nGo's, with Options.%s = %v, with\n%v", name, c.c, got, c.field, c.goVal, want)
		}
		if p := py(); p != nil && !reflect.DeepEqual(p["options"], want) {
			t.Errorf("Python: %s=%v: the hub runs with %v (error %v)\nGo's with\n%v", kw, c.py, p["options"], p["error"], want)
		}
		if c.bad == "" {
			continue
		}
		if out, ok := cRun(name + "=" + c.bad); ok || !strings.Contains(out, name+" is") {
			t.Errorf("C: %s=%s: want a refusal naming %s, got %.200s", name, c.bad, name, out)
		}
		if c.bad == "-1" { // Python spells the enums by name: a bad one is its own error
			if p := py(); p != nil {
				if e, _ := p["error"].(string); !strings.Contains(e, kw+" is") {
					t.Errorf("Python: %s=-1: want an error naming %s, got %v", kw, kw, p)
				}
			}
		}
	}
}
