package spanfile

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	gpuspansv1 "github.com/gpuspans/gpuspans/proto/gpuspans/v1"
)

func TestRequestsRoundTrip(t *testing.T) {
	recs := []gpuspans.RequestRecord{
		{Seq: 1, ID: 42, Model: "llama", Adapter: "lora-7", Tenant: "acme", Steps: 17, FirstStep: 3, LastStep: 19,
			NewTokens: 512, DecodedTokens: 16, GPUTime: 9 * time.Millisecond, Input: 6 * time.Millisecond, Output: 3 * time.Millisecond,
			Busy: 7 * time.Millisecond, BusyTime: 8 * time.Millisecond, Unmeasured: 1, Fallback: 2, Abandoned: true,
			StartNs: 1_700_000_000_000_000_000, EndNs: 1_700_000_000_010_000_000,
			TraceID: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: [8]byte{9, 8, 7, 6, 5, 4, 3, 2},
			Lanes: []gpuspans.RequestLaneTime{{Lane: "prefill", Steps: 1, GPUTime: 6 * time.Millisecond}, {Lane: "decode", Steps: 16, GPUTime: 3 * time.Millisecond, Busy: 2 * time.Millisecond, BusyTime: 3 * time.Millisecond}}},
		{Seq: 2, ID: 43, Steps: 1, NewTokens: 1, GPUTime: time.Microsecond, Input: time.Microsecond},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, Options{Now: fixedClock})
	if err := w.WriteRequests("host-a", recs); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRequests("host-a", nil); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&buf, Options{})
	var got []gpuspans.RequestRecord
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b := rec.GetRequests()
		if b == nil {
			continue
		}
		if b.GetSource() != "host-a" || b.GetWrittenUnixNs() != epoch.UnixNano() {
			t.Fatalf("batch from %q at %d", b.GetSource(), b.GetWrittenUnixNs())
		}
		for _, p := range b.GetRequests() {
			rr, err := RequestFromProto(p)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rr)
		}
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, recs)
	}
	if _, err := RequestFromProto(&gpuspansv1.RequestRecord{Id: 1, TraceId: []byte{1, 2}}); err == nil || !strings.Contains(err.Error(), "16 and 8") {
		t.Fatalf("a short trace id: %v", err)
	}
}
