package main

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/cmd/gpuspans/internal/demo"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/optname"
)

// runSets are the options the demo sets itself: its engine's two lanes
// and a recent-span ring sized for its trace.
var runSets = map[string]bool{"Lanes": true, "RecentSpans": true}

// TestHubFlagsCoverOptions holds the demo's flags to the hub's options:
// every gpuspans.Options field that holds data (go/capi's TestOptionsAgree
// walks the same fields through C and Python), but those the demo sets
// itself, has a flag of its name in snake case that sets exactly it.
func TestHubFlagsCoverOptions(t *testing.T) {
	values := map[reflect.Type][2]string{ // a value other than the default: flag text, and as %v prints it
		reflect.TypeOf(0):                        {"7", "7"},
		reflect.TypeOf(false):                    {"true", "true"},
		reflect.TypeOf(0.0):                      {"5e14", "5e+14"},
		reflect.TypeOf(time.Duration(0)):         {"3s", "3s"},
		reflect.TypeOf(gpuspans.Level(0)):        {"step", "step"},
		reflect.TypeOf(gpuspans.KernelTiming(0)): {"cupti", "cupti"},
		reflect.TypeOf(gpuspans.StartTimes(0)):   {"always", "always"},
	}
	typ := reflect.TypeOf(gpuspans.Options{})
	checked := 0
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if k := f.Type.Kind(); k == reflect.Func || k == reflect.Ptr || runSets[f.Name] {
			continue
		}
		name := optname.Snake(f.Name)
		cfg := demo.DefaultConfig()
		fs, _, _ := demoFlags(&cfg)
		if fs.Lookup(name) == nil {
			t.Errorf("Options.%s has no flag --%s", f.Name, name)
			continue
		}
		v, ok := values[f.Type]
		if !ok {
			t.Fatalf("Options.%s is a %v, which this test has no value for: teach it", f.Name, f.Type)
		}
		before := cfg.Hub
		if err := fs.Parse([]string{"--" + name + "=" + v[0]}); err != nil {
			t.Errorf("--%s=%s: %v", name, v[0], err)
			continue
		}
		after := cfg.Hub
		got := reflect.ValueOf(after).FieldByName(f.Name)
		if s := fmtValue(got); s != v[1] {
			t.Errorf("--%s=%s set Options.%s to %s, want %s", name, v[0], f.Name, s, v[1])
		}
		reflect.ValueOf(&after).Elem().FieldByName(f.Name).Set(reflect.ValueOf(before).FieldByName(f.Name))
		if !reflect.DeepEqual(after, before) {
			t.Errorf("--%s changed other options too", name)
		}
		checked++
	}
	if checked < 9 {
		t.Errorf("checked %d flags; Options has more", checked)
	}
	// And the hub's bounds are the flags' (a value New refuses, named as
	// the flag).
	var out, errOut bytes.Buffer
	if code := demoCmd([]string{"--kernel_labels=-1", "--steps=1", "--listen="}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "--kernel_labels is -1") {
		t.Errorf("--kernel_labels=-1: exit %d, %q", code, errOut.String())
	}
}

// fmtValue prints a field's value as its flag reads it back.
func fmtValue(v reflect.Value) string {
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(v.Interface())
}
