package spanfile_test

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/gpuspans/gpuspans/go/export/spanfile"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Spans written to a span file and read back, record by record.
func Example() {
	start := time.Unix(1_700_000_000, 0).UnixNano()
	spans := []gpuspans.Span{
		{Seq: 1, Kind: gpuspans.KindLane, Name: "decode", Stream: 0x10, Step: 7, StartNs: start, DurationNs: 250_000},
		{Seq: 2, Kind: gpuspans.KindKernel, Name: "attention", Stream: 0x10, Step: 7, StartNs: start + 1_000, DurationNs: 12_500},
	}
	clock := func() time.Time { return time.Unix(1_700_000_001, 0) }

	var file bytes.Buffer
	w := spanfile.NewWriter(&file, spanfile.Options{Now: clock})
	if err := w.WriteSpans("engine-0", spans); err != nil {
		panic(err)
	}

	r := spanfile.NewReader(&file, spanfile.Options{})
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		if h := rec.GetHeader(); h != nil {
			fmt.Println("header:", h.GetSchema())
		}
		if b := rec.GetSpans(); b != nil {
			fmt.Printf("%d spans from %s\n", len(b.GetSpans()), b.GetSource())
			for _, p := range b.GetSpans() {
				s, err := spanfile.SpanFromProto(p)
				if err != nil {
					panic(err)
				}
				fmt.Printf("  step %d %s %s: %v\n", s.Step, s.Kind, s.Name, time.Duration(s.DurationNs))
			}
		}
	}
	// Output:
	// header: gpuspans.v1
	// 2 spans from engine-0
	//   step 7 lane decode: 250µs
	//   step 7 kernel attention: 12.5µs
}
