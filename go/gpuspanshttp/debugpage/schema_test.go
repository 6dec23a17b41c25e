package debugpage_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/gpuspans/gpuspans/go/export/spanfile"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest/golden"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/debugpage"
)

// pageOnly are the live page JSON's fields that the schema lacks, as paths
// ("[]" for any element of a list).
var pageOnly = map[string]bool{
	"backend":           true, // what the hub records from, as the page's options say
	"armed_ratio":       true, // armed_steps / step
	"schema":            true, // the buckets' native-histogram schema, a constant
	"zero_threshold_ns": true, // the zero bucket's bound, a constant
	"lanes[].p50_ns":    true, // quantiles estimated from the buckets
	"lanes[].p90_ns":    true,
	"lanes[].p99_ns":    true,
	"kernels[].p50_ns":  true,
	"kernels[].p90_ns":  true,
	"kernels[].p99_ns":  true,
	"recent_windows":    true, // the hub's recent windows (gpuspans.Hub.Windows)
	"options":           true, // gpuspans.Options as the hub runs with them
	// The kernel tracer's live state: its windows (what each cost the
	// stepping thread, the last one's kernels) and cut reads. Prometheus
	// carries them too; span files keep what they describe, the spans.
	"kernel_timing.reads_cut": true,
	"kernel_timing.windows":   true,
	// The latest window's timelines, for the page to draw, and each
	// lane's recent busy ratio (recent_busy_ns / recent_time_ns).
	"gpu_time.timelines":          true,
	"gpu_time.lanes[].busy_ratio": true,
	"gpu_time.gaps[].p50_ns":      true,
	"gpu_time.gaps[].p90_ns":      true,
	"gpu_time.gaps[].p99_ns":      true,
	// A lane's achieved FLOP/s (gpuspans.LaneAttribution.Achieved), and
	// the quantiles of a class's GPU time per request.
	"requests.lanes[].achieved_flops_served": true,
	"requests.lanes[].achieved_flops_busy":   true,
	"requests.classes[].per_request.p50_ns":  true,
	"requests.classes[].per_request.p90_ns":  true,
	"requests.classes[].per_request.p99_ns":  true,
}

// protoOnly are the schema's fields that the live page leaves out.
var protoOnly = map[string]bool{
	"device_counters": true, // the counters' span outcomes per device
}

// pageEnums are the page's enum fields, with the prefix the schema's value
// names carry: the page writes "kernel" for LEVEL_KERNEL.
var pageEnums = map[string]string{"level": "LEVEL_"}

// TestPageJSONIsTheSchema holds the live page's JSON (debugpage, which may
// not link protobuf) to the wire schema: every key it has is the schema's
// field of the same protojson name (UseProtoNames) at the same path, with
// the same value, but for the page-only fields listed above.
func TestPageJSONIsTheSchema(t *testing.T) {
	s := golden.FullSnapshot()
	taken := time.Unix(1_700_000_000, 123)
	// As SnapshotPath serves it: with the hub's recent windows.
	ws := []gpuspans.Window{{Start: taken.Add(-time.Second), End: taken, Open: true, Schema: gpuspans.Schema, Landed: 1,
		Lanes: []gpuspans.WindowAggregate{{Name: "decode", Count: 1, Keys: []int{-400}, Counts: []uint64{1}, Schema: gpuspans.Schema}}}}
	page, err := debugpage.MarshalSnapshotWindows(&s, ws, "sim", taken)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(spanfile.SnapshotToProto(&s, taken))
	if err != nil {
		t.Fatal(err)
	}
	pv, wv := decode(t, page), decode(t, wire)
	var problems []string
	compareJSON("", pv, wv, &problems)
	for p := range pageOnly {
		if !hasPath(pv, p) {
			problems = append(problems, p+": listed as page-only, but the page has no such field")
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
	if t.Failed() {
		t.Logf("page JSON:\n%s\nprotojson:\n%s", page, wire)
	}
}

func decode(t *testing.T, b []byte) interface{} {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v interface{}
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return v
}

// compareJSON reports where page, at path, is not wire's value.
func compareJSON(path string, page, wire interface{}, problems *[]string) {
	bad := func(format string, args ...interface{}) {
		*problems = append(*problems, path+": "+fmt.Sprintf(format, args...))
	}
	switch p := page.(type) {
	case map[string]interface{}:
		w, ok := wire.(map[string]interface{})
		if !ok {
			bad("an object on the page, %v in the schema", wire)
			return
		}
		for k, pv := range p {
			sub := join(path, k)
			if pageOnly[sub] {
				continue
			}
			wv, ok := w[k]
			if !ok {
				bad("%q is not a field of the schema", k)
				continue
			}
			compareJSON(sub, pv, wv, problems)
		}
		for k, wv := range w {
			// The page leaves out empty strings (a device's reason, identity).
			if _, ok := p[k]; !ok && wv != "" && !protoOnly[join(path, k)] {
				bad("the schema's field %q is not on the page", k)
			}
		}
	case []interface{}:
		w, ok := wire.([]interface{})
		if !ok || len(w) != len(p) {
			bad("%d elements on the page, %v in the schema", len(p), wire)
			return
		}
		for i := range p {
			compareJSON(path+"[]", p[i], w[i], problems)
		}
	case json.Number:
		// protojson writes 64-bit integers as strings.
		if w := fmt.Sprint(wire); w != p.String() {
			bad("%s on the page, %s in the schema", p, w)
		}
	case string:
		w, _ := wire.(string)
		if prefix, ok := pageEnums[path]; ok {
			w = strings.ToLower(strings.TrimPrefix(w, prefix))
		}
		if w != p {
			bad("%q on the page, %v in the schema", p, wire)
		}
	default:
		if fmt.Sprint(page) != fmt.Sprint(wire) {
			bad("%v on the page, %v in the schema", page, wire)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// hasPath reports whether v has a field at path (lists: in any element).
func hasPath(v interface{}, path string) bool {
	key, rest, _ := strings.Cut(path, ".")
	list := strings.HasSuffix(key, "[]")
	m, ok := v.(map[string]interface{})
	if !ok {
		return false
	}
	sub, ok := m[strings.TrimSuffix(key, "[]")]
	switch {
	case !ok:
		return false
	case !list:
		return rest == "" || hasPath(sub, rest)
	}
	elems, _ := sub.([]interface{})
	for _, e := range elems {
		if rest == "" || hasPath(e, rest) {
			return true
		}
	}
	return false
}
