package prom

import (
	"fmt"
	"math"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// fixedExemplars is an Exemplars of fixed answers, by "device/lane".
type fixedExemplars struct {
	mu    sync.Mutex
	by    map[string]Exemplar
	asked []string
}

func (f *fixedExemplars) LaneExemplar(device int, lane string) (Exemplar, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := fmt.Sprintf("%d/%s", device, lane)
	f.asked = append(f.asked, k)
	e, ok := f.by[k]
	return e, ok
}

var (
	exTrace = [16]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	exSpan  = [8]byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
	exTime  = time.Unix(1_700_000_000, 250_000_000)
)

// TestExemplarsOpenMetrics: /metrics served as OpenMetrics carries each
// lane's exemplar on the classic bucket holding its duration, with the
// trace and span ids; lanes without one carry none, and kernels none.
func TestExemplarsOpenMetrics(t *testing.T) {
	src := &fixedExemplars{by: map[string]Exemplar{
		"0/prefill": {Duration: 150 * time.Microsecond, TraceID: exTrace, SpanID: exSpan, Time: exTime},
	}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(servedHub(t), Options{Exemplars: src, KernelHistograms: true}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}).ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("Content-Type %q", ct)
	}
	body := rec.Body.String()
	// 150 us lies in (2^-13, 2^-12] s = (122 us, 244 us].
	want := regexp.MustCompile(`\ngpuspans_lane_duration_seconds_bucket\{device="0",lane="prefill",le="0\.000244140625"\} 2 # \{trace_id="4bf92f3577b34da6a3ce929d0e0e4736",span_id="00f067aa0ba902b7"\} 0\.00015 1\.700000000(25|2499\d*)e\+09\n`)
	if !want.MatchString(body) {
		t.Errorf("no line\n%s\nin\n%s", want, grepLines(body, "lane_duration_seconds_bucket"))
	}
	if n := strings.Count(body, " # {"); n != 1 {
		t.Errorf("%d exemplars, want 1:\n%s", n, grepLines(body, " # {"))
	}
	if got := strings.Join(src.asked, " "); got != "0/prefill 0/decode" {
		t.Errorf("asked for %s, want the lanes with spans", got)
	}
}

// TestExemplarPlacement: an exemplar goes to the classic bucket that holds
// its value, edges included, to an explicit +Inf bucket above 16 s, and to
// the native histogram's exemplars.
func TestExemplarPlacement(t *testing.T) {
	l := layouts[DefaultClassicBuckets]
	for _, tc := range []struct {
		d    time.Duration
		want float64 // the bucket's upper bound
	}{
		{150 * time.Millisecond, 0.25},
		{5 * time.Second, 8},
		{time.Duration(math.Floor(l.bounds[5] * 1e9)), l.bounds[5]},   // just under an edge
		{time.Duration(math.Floor(l.bounds[5]*1e9)) + 1, l.bounds[6]}, // just over it
		{time.Second, 1},                                              // on an edge: the bucket it closes
		{100 * time.Nanosecond, l.bounds[0]},
		{20 * time.Second, -1}, // +Inf
	} {
		var a gpuspans.Aggregate
		a.Observe(tc.d)
		if gpuspans.BucketUpperBound(gpuspans.BucketIndex(tc.d)) > tc.want && tc.want > 0 {
			t.Fatalf("%v: the hub buckets it above %g", tc.d, tc.want)
		}
		hist := l.histogram(&a, true)
		l.attach(hist, &a, &Exemplar{Duration: tc.d, TraceID: exTrace, SpanID: exSpan})
		var at []float64
		for _, b := range hist.GetBucket() {
			if b.GetExemplar() != nil {
				at = append(at, b.GetUpperBound())
				if b.GetExemplar().GetValue() != float64(tc.d)/1e9 || b.GetExemplar().GetTimestamp() != nil {
					t.Errorf("%v: exemplar %v", tc.d, b.GetExemplar())
				}
			}
		}
		want := tc.want
		if want < 0 {
			want = hist.GetBucket()[len(hist.GetBucket())-1].GetUpperBound()
			if want < 1e300 || len(hist.GetBucket()) != len(l.bounds)+1 || hist.GetBucket()[len(l.bounds)].GetCumulativeCount() != 1 {
				t.Errorf("%v: no +Inf bucket holding it: %v", tc.d, hist.GetBucket()[len(hist.GetBucket())-1])
			}
		}
		if len(at) != 1 || at[0] != want {
			t.Errorf("%v: exemplar on buckets %v, want le=%g", tc.d, at, want)
		}
		if ex := hist.GetExemplars(); len(ex) != 1 || ex[0] != firstExemplar(hist) {
			t.Errorf("%v: native exemplars %v", tc.d, ex)
		}
	}
	// Classic only: no native exemplars.
	var a gpuspans.Aggregate
	a.Observe(time.Millisecond)
	hist := l.histogram(&a, false)
	l.attach(hist, &a, &Exemplar{Duration: time.Millisecond})
	if len(hist.GetExemplars()) != 0 || firstExemplar(hist) == nil {
		t.Errorf("classic only: native exemplars %v, classic %v", hist.GetExemplars(), firstExemplar(hist))
	}
}

func firstExemplar(h *dto.Histogram) *dto.Exemplar {
	for _, b := range h.GetBucket() {
		if b.GetExemplar() != nil {
			return b.GetExemplar()
		}
	}
	return nil
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestExemplarLabels: trace_id and span_id are lower-case hex of the W3C
// ids, within OpenMetrics' 128-character bound on an exemplar's labels.
func TestExemplarLabels(t *testing.T) {
	var a gpuspans.Aggregate
	a.Observe(time.Millisecond)
	l := layouts[DefaultClassicBuckets]
	hist := l.histogram(&a, true)
	l.attach(hist, &a, &Exemplar{Duration: time.Millisecond, TraceID: exTrace, SpanID: exSpan, Time: exTime})
	e := firstExemplar(hist)
	n := 0
	for _, lp := range e.GetLabel() {
		n += len(lp.GetName()) + len(lp.GetValue())
		if !regexp.MustCompile(`^[0-9a-f]+$`).MatchString(lp.GetValue()) {
			t.Errorf("%s=%q", lp.GetName(), lp.GetValue())
		}
	}
	if n > 128 || !e.GetTimestamp().AsTime().Equal(exTime) {
		t.Errorf("%d characters of labels, timestamp %v", n, e.GetTimestamp().AsTime())
	}
}
