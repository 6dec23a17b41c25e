// Over 600 lines: the exporter's end-to-end tests, every one against the
// in-process receiver below (OTLP over HTTP and gRPC) and its helpers.

package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// start has nanoseconds, so that timestamps must keep them.
var start = time.Unix(1_700_000_000, 123_456_789)

var laneStream = map[int]backend.Stream{0: 0x10, 1: 0x11}

// receiver is an in-process OTLP collector: it decodes every
// ExportTraceServiceRequest posted to /v1/traces (OTLP/HTTP) or sent to
// its TraceService (gRPC), and keeps the last request's headers.
type receiver struct {
	url      string // the endpoint: http://127.0.0.1:port
	protocol string
	srv      *httptest.Server
	mu       sync.Mutex
	got      []*coltracepb.ExportTraceServiceRequest
	headers  map[string]string // of the last request, lower-case names
	err      error
}

// newReceiver starts an OTLP/HTTP receiver.
func newReceiver(t *testing.T) *receiver {
	r := &receiver{protocol: ProtocolHTTP}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.url = r.srv.URL
	t.Cleanup(r.srv.Close)
	return r
}

// newProtocolReceiver starts a receiver of the protocol.
func newProtocolReceiver(t *testing.T, protocol string) *receiver {
	if protocol == ProtocolGRPC {
		return newGRPCReceiver(t, nil)
	}
	return newReceiver(t)
}

// newGRPCReceiver starts an OTLP/gRPC receiver, with TLS when creds say.
func newGRPCReceiver(t *testing.T, creds credentials.TransportCredentials) *receiver {
	r := &receiver{protocol: ProtocolGRPC}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	coltracepb.RegisterTraceServiceServer(srv, grpcTraces{r: r})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	r.url = "http://" + lis.Addr().String()
	return r
}

// grpcTraces is the receiver's TraceService.
type grpcTraces struct {
	coltracepb.UnimplementedTraceServiceServer
	r       *receiver
	partial *coltracepb.ExportTracePartialSuccess
}

func (g grpcTraces) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	h := make(map[string]string)
	for k, v := range md {
		h[k] = strings.Join(v, ",")
	}
	g.r.mu.Lock()
	g.r.got = append(g.r.got, req)
	g.r.headers = h
	g.r.mu.Unlock()
	return &coltracepb.ExportTraceServiceResponse{PartialSuccess: g.partial}, nil
}

// header returns a header of the last request.
func (r *receiver) header(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers[strings.ToLower(name)]
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	fail := func(err error) {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
	if req.URL.Path != "/v1/traces" || req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-protobuf" {
		fail(fmt.Errorf("%s %s, Content-Type %q: want POST /v1/traces, application/x-protobuf", req.Method, req.URL.Path, req.Header.Get("Content-Type")))
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			fail(err)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		fail(err)
		return
	}
	var m coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &m); err != nil {
		fail(err)
		return
	}
	h := make(map[string]string)
	for k, v := range req.Header {
		h[strings.ToLower(k)] = strings.Join(v, ",")
	}
	r.mu.Lock()
	r.got = append(r.got, &m)
	r.headers = h
	r.mu.Unlock()
	resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

// received is a span as the collector got it, with its resource and scope.
type received struct {
	span     *tracepb.Span
	resource map[string]string
	scope    string
}

func (r *receiver) spans(t *testing.T) []received {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		t.Fatalf("receiver: %v", r.err)
	}
	var out []received
	for _, m := range r.got {
		for _, rs := range m.ResourceSpans {
			res := attrMap(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					out = append(out, received{sp, res, ss.GetScope().GetName()})
				}
			}
		}
	}
	return out
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string)
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(x.IntValue)
		default:
			m[kv.Key] = v.String()
		}
	}
	return m
}

// serve runs steps on two simulated GPUs, kernel spans armed on even steps;
// before each step's spans land, onStep is called with the step number.
func serve(t testing.TB, h *gpuspans.Hub, steps int, onStep func(step uint64)) {
	t.Helper()
	clock := sim.NewClock(start)
	gpus := []*sim.GPU{sim.New(sim.Options{Device: 0, Now: clock.Now}), sim.New(sim.Options{Device: 1, Now: clock.Now})}
	for d, g := range gpus {
		if err := h.Install(d, laneStream[d], g.Opener()); err != nil {
			t.Fatal(err)
		}
	}
	for handle, name := range map[uint64]string{0xa1: "attention", 0xa2: "mlp"} {
		if err := h.RegisterKernel(handle, name); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < steps; i++ {
		h.BeginStep()
		if onStep != nil {
			onStep(h.Step())
		}
		for _, lane := range []int{0, 1} {
			h.LaneBegin(lane)
			for d, g := range gpus {
				for _, k := range []struct {
					handle uint64
					ns     int64
				}{{0xa1, 40_125}, {0xa2, 30_007 + int64(lane)}} {
					ks := h.Device(d).KernelBegin(k.handle, laneStream[d])
					g.Launch(laneStream[d], time.Duration(k.ns))
					h.KernelEnd(ks)
				}
			}
			h.LaneEnd(lane)
		}
		clock.Advance(time.Millisecond)
	}
	// A harvest is skipped while the exporter's poller holds the hub's lock
	// (RecentSpans): harvest until every span has landed.
	for i := 0; i < 10000 && h.Snapshot().Counters.InFlight > 0; i++ {
		h.Harvest()
		time.Sleep(time.Millisecond)
	}
}

func newHub(t testing.TB) *gpuspans.Hub {
	t.Helper()
	h, err := gpuspans.New(gpuspans.Options{
		Level: gpuspans.LevelKernel, KernelSpanEvery: 2, RecentSpans: 1 << 14,
		Logf: func(string, ...interface{}) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func sc(trace0, span0 byte) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{trace0, 1}, SpanID: trace.SpanID{span0, 2}, TraceFlags: trace.FlagsSampled,
	})
}

// TestReceiver sends four steps, two sampled, to an in-process collector,
// over each protocol, and checks every span it decodes against the hub's.
func TestReceiver(t *testing.T) {
	for _, p := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(strings.ReplaceAll(p, "/", "_"), func(t *testing.T) { testReceiver(t, p) })
	}
}

func testReceiver(t *testing.T, protocol string) {
	rcv := newProtocolReceiver(t, protocol)
	h := newHub(t)
	var logs []string
	e, err := New(context.Background(), h, Options{
		Protocol:    protocol,
		Endpoint:    rcv.url,
		LookupEnv:   noEnv,
		ServiceName: "engine-under-test",
		SampleEvery: 2,
		MaxLinks:    2,
		PollEvery:   time.Hour, // Close reads the hub: the test decides when
		Logf:        func(f string, a ...interface{}) { logs = append(logs, fmt.Sprintf(f, a...)) },
	})
	if err != nil {
		t.Fatal(err)
	}

	// The engine's own request span, through the exporter's provider.
	_, req := e.TracerProvider().Tracer("engine").Start(context.Background(), "request")
	reqSC := req.SpanContext()
	req.End()

	links := map[uint64][]trace.SpanContext{2: {reqSC, sc(7, 7), sc(8, 8)}, 3: {sc(9, 9)}, 4: {sc(10, 10)}}
	serve(t, h, 4, func(step uint64) { e.LinkStep(step, links[step]) })
	e.LinkStep(4, []trace.SpanContext{sc(11, 11), sc(12, 12)}) // calls add up, to the cap

	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	landed := h.RecentSpans(0, nil)
	var sampled []gpuspans.Span
	for _, s := range landed {
		if s.Step%2 == 0 {
			sampled = append(sampled, s)
		}
	}
	// 4 steps x 2 lanes x 2 devices, and on the 2 armed steps 2 x 2 kernels per device.
	if len(landed) != 16+2*2*2*2 || len(sampled) != 8+16 {
		t.Fatalf("%d spans landed, %d sampled", len(landed), len(sampled))
	}

	got := rcv.spans(t)
	byName := make(map[string][]received)
	byID := make(map[string]received)
	host, _ := os.Hostname()
	for _, r := range got {
		byName[r.span.Name] = append(byName[r.span.Name], r)
		byID[hex.EncodeToString(r.span.SpanId)] = r
		if r.resource["service.name"] != "engine-under-test" || r.resource["host.name"] != host ||
			r.resource["process.pid"] != fmt.Sprint(os.Getpid()) || len(r.resource["service.instance.id"]) != 36 ||
			r.resource["telemetry.sdk.language"] != "go" {
			t.Errorf("span %q: resource %v", r.span.Name, r.resource)
		}
	}
	if tg := e.Target(); tg.Protocol != protocol || tg.EndpointFrom != "Options.Endpoint" || tg.ProtocolFrom != "Options.Protocol" {
		t.Errorf("Target() = %+v", tg)
	}
	if len(got) != len(sampled)+2+1 {
		t.Fatalf("the collector got %d spans, want %d GPU spans, 2 step roots and a request", len(got), len(sampled))
	}
	if r := byName["request"]; len(r) != 1 || r[0].scope != "engine" || hex.EncodeToString(r[0].span.SpanId) != reqSC.SpanID().String() {
		t.Errorf("request spans %v", r)
	}

	roots := make(map[string]received) // by step
	for _, r := range byName[StepSpanName] {
		a := attrMap(r.span.Attributes)
		roots[a["gpuspans.step"]] = r
		if len(r.span.ParentSpanId) != 0 || r.scope != ScopeName {
			t.Errorf("root %v: has a parent, or scope %q", r.span, r.scope)
		}
	}
	if len(roots) != 2 || roots["2"].span == nil || roots["4"].span == nil {
		t.Fatalf("roots %v", roots)
	}
	if bytes.Equal(roots["2"].span.TraceId, roots["4"].span.TraceId) {
		t.Error("steps 2 and 4 share a trace")
	}

	wantLinks := map[uint64][]string{
		2: {reqSC.SpanID().String(), sc(7, 7).SpanID().String()},
		4: {sc(10, 10).SpanID().String(), sc(11, 11).SpanID().String()},
	}
	seen := 0
	for _, s := range sampled {
		kind, name := "lane", s.Name
		if s.Kind == gpuspans.KindKernel {
			kind = "kernel"
		}
		var r *received
		for i, c := range byName[kind+" "+name] {
			a := attrMap(c.span.Attributes)
			if a["gpuspans.step"] == fmt.Sprint(s.Step) && a["gpuspans.device"] == fmt.Sprint(s.Device) &&
				c.span.StartTimeUnixNano == uint64(s.StartNs) {
				r = &byName[kind+" "+name][i]
			}
		}
		if r == nil {
			t.Errorf("span %+v not received", s)
			continue
		}
		seen++
		sp := r.span
		if sp.EndTimeUnixNano-sp.StartTimeUnixNano != uint64(s.DurationNs) {
			t.Errorf("%s: duration %d, want %d", sp.Name, sp.EndTimeUnixNano-sp.StartTimeUnixNano, s.DurationNs)
		}
		a := attrMap(sp.Attributes)
		want := map[string]string{
			"hw.type": "gpu", "hw.id": fmt.Sprintf("GPU-51a1a7ed-0000-0000-0000-%012x", s.Device), "hw.model": "gpuspans simulated GPU",
			"gpuspans.pci_bus_id": fmt.Sprintf("00000000:%02X:00.0", 0x80+s.Device), "gpuspans.driver": "13.0",
			"gpuspans.device": fmt.Sprint(s.Device), "gpuspans.stream": fmt.Sprintf("%#x", uint64(s.Stream)),
			"gpuspans.kind": kind, "gpuspans." + kind: s.Name, "gpuspans.step": fmt.Sprint(s.Step),
		}
		if fmt.Sprint(a) != fmt.Sprint(want) {
			t.Errorf("%s attributes\n%v\nwant\n%v", sp.Name, a, want)
		}
		root := roots[fmt.Sprint(s.Step)].span
		if !bytes.Equal(sp.TraceId, root.TraceId) {
			t.Errorf("%s of step %d is not in its step's trace", sp.Name, s.Step)
		}
		if sp.StartTimeUnixNano < root.StartTimeUnixNano || sp.EndTimeUnixNano > root.EndTimeUnixNano {
			t.Errorf("%s lies outside its step's root", sp.Name)
		}
		parent := byID[hex.EncodeToString(sp.ParentSpanId)].span
		switch {
		case kind == "lane":
			if parent != root {
				t.Errorf("lane %s: parent %v, want the step root", sp.Name, parent)
			}
			var ids []string
			for _, l := range sp.Links {
				ids = append(ids, hex.EncodeToString(l.SpanId))
			}
			if fmt.Sprint(ids) != fmt.Sprint(wantLinks[s.Step]) || sp.DroppedLinksCount != 1 {
				t.Errorf("lane %s of step %d: links %v (%d dropped), want %v (1 dropped)", sp.Name, s.Step, ids, sp.DroppedLinksCount, wantLinks[s.Step])
			}
			if tid := reqSC.TraceID(); s.Step == 2 && !bytes.Equal(sp.Links[0].TraceId, tid[:]) {
				t.Errorf("the link to the request has trace %x", sp.Links[0].TraceId)
			}
		default:
			pa := attrMap(parent.Attributes)
			if !strings.HasPrefix(parent.Name, "lane ") || pa["gpuspans.device"] != a["gpuspans.device"] ||
				sp.StartTimeUnixNano < parent.StartTimeUnixNano || sp.EndTimeUnixNano > parent.EndTimeUnixNano {
				t.Errorf("kernel %s: parent %v is not its device's lane holding it", sp.Name, parent)
			}
		}
	}
	if seen != len(sampled) {
		t.Errorf("%d of %d sampled spans received", seen, len(sampled))
	}

	st := e.Stats()
	want := Stats{
		Read: uint64(len(landed)), Unsampled: uint64(len(landed) - len(sampled)),
		Enqueued: uint64(len(got)), Exported: uint64(len(got)), Exports: st.Exports,
		LinksDropped: 2, // step 2's third link, step 4's third
	}
	if st != want || st.Exports == 0 {
		t.Errorf("Stats() = %+v\nwant       %+v", st, want)
	}
	if len(logs) != 0 {
		t.Errorf("logged %q", logs)
	}
}

// TestLateSpans: a step sent in two parts has one root, and its late spans
// join its trace.
func TestLateSpans(t *testing.T) {
	rcv := newReceiver(t)
	h := newHub(t)
	e, err := New(context.Background(), h, Options{LookupEnv: noEnv, Endpoint: rcv.srv.URL, SampleEvery: 1, PollEvery: time.Hour, NoKernelSpans: true})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, h, 2, nil)
	e.asm.poll(true) // the poller sleeps for an hour: no race
	// More lane spans of step 2, landing after it was sent.
	h.LaneBegin(0)
	h.LaneEnd(0)
	h.Harvest()
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	perTrace := make(map[string]int)
	roots := 0
	for _, r := range rcv.spans(t) {
		perTrace[hex.EncodeToString(r.span.TraceId)]++
		if r.span.Name == StepSpanName {
			roots++
		}
	}
	if roots != 2 || perTrace[e.traceID(1).String()] != 5 || perTrace[e.traceID(2).String()] != 7 {
		t.Errorf("%d roots, spans per trace %v; want 2 roots, step 1: 5 spans, step 2: 7", roots, perTrace)
	}
	if s := e.Stats(); s.Unsampled != 8 {
		t.Errorf("%d kernel spans left out, want 8", s.Unsampled)
	}
}

// settle waits for the goroutine count to drop to at most n.
func settle(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // generous: a loaded CI machine under -race
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left, want %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUnreachable: with no collector at the endpoint, spans are dropped
// and counted, the engine never waits, and Close and a cancelled context
// end every goroutine.
func TestUnreachable(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	// A port that takes connections and never answers: requests hang
	// until their timeout, so the queue fills. It keeps what it accepted,
	// to see that the exporter's stop closed every one.
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	accepted := make(chan net.Conn, 1024)
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()

	for _, c := range []struct {
		name, addr string
		cancel     bool // stop with the context given to New, not Close
	}{{"closed-port", closedAddr, false}, {"hung", hung.Addr().String(), false}, {"hung/ctx-cancel", hung.Addr().String(), true}} {
		t.Run(c.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			h := newHub(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var logs []string
			e, err := New(ctx, h, Options{
				LookupEnv: noEnv, Endpoint: "http://" + c.addr, SampleEvery: 1, QueueSpans: 16, BatchSpans: 4,
				PollEvery: time.Millisecond, ExportTimeout: 10 * time.Minute,
				Logf: func(f string, a ...interface{}) { mu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); mu.Unlock() },
			})
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(e.Collector())
			serve(t, h, 50, nil) // 50 steps of 12 spans
			total := uint64(50 * 4)
			total += 25 * 8
			// Wait until the poller has read everything.
			for deadline := time.Now().Add(60 * time.Second); e.Stats().Read < total && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond) // a few more polls: pending steps go out

			stopped := time.Now()
			if c.cancel {
				cancel()
				<-e.sendDone
			} else {
				cctx, ccancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				_ = e.Close(cctx)
				ccancel()
			}
			// A bound no load reaches, far below the requests' own.
			if d := time.Since(stopped); d > 2*time.Minute {
				t.Errorf("stopping took %v, with requests that would wait 10 min", d)
			}
			// Every connection the exporter made is closed by the time it
			// stopped: none waits in net/http's idle pool.
			for n := len(accepted); n > 0; n-- {
				conn := <-accepted
				_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
				if _, err := conn.Read(make([]byte, 1<<16)); !errors.Is(err, io.EOF) {
					for err == nil {
						_, err = conn.Read(make([]byte, 1<<16))
					}
					if !errors.Is(err, io.EOF) {
						t.Errorf("a connection to the hung collector is still open after the exporter stopped: %v", err)
					}
				}
				conn.Close()
			}
			st := e.Stats()
			if st.Read != total || st.Exported != 0 {
				t.Errorf("read %d of %d, exported %d", st.Read, total, st.Exported)
			}
			dropped := st.QueueFull + st.ExportFailed + st.Shutdown
			if st.Enqueued+st.QueueFull != total+50 || dropped != total+50 || st.Queued != 0 {
				t.Errorf("%d spans and roots, %+v: every one should be dropped and counted", total+50, st)
			}
			if c.name == "closed-port" && (st.ExportFailed == 0 || st.ExportErrors == 0) {
				t.Errorf("closed port: %+v, want failed exports", st)
			}
			if c.name != "closed-port" && st.QueueFull == 0 {
				t.Errorf("hung collector: %+v, want a full queue", st)
			}
			if got := gathered(t, reg, "gpuspans_otlp_spans_dropped_total", "reason", "queue_full"); got != float64(st.QueueFull) {
				t.Errorf("gpuspans_otlp_spans_dropped_total{reason=queue_full} = %v, want %d", got, st.QueueFull)
			}
			if n, err := testutil.GatherAndCount(reg); err != nil || n != 15 {
				t.Errorf("gathered %d series (%v), want 15", n, err)
			}
			mu.Lock()
			if c.name == "closed-port" && (len(logs) == 0 || len(logs) > 2 || !strings.Contains(logs[0], "export of")) {
				t.Errorf("logs %q: want one line about the failure", logs)
			}
			mu.Unlock()
			settle(t, base)
		})
	}
}

// gathered returns the value of a series of name with a label.
func gathered(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", name, label, value)
	return 0
}

func TestLinkStepAllocs(t *testing.T) {
	h := newHub(t)
	e, err := New(context.Background(), h, Options{LookupEnv: noEnv, Endpoint: "http://127.0.0.1:1", SampleEvery: 1, MaxLinks: 4, LinkSteps: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	links := []trace.SpanContext{sc(1, 1), sc(2, 2), sc(3, 3), sc(4, 4), sc(5, 5)}
	step := uint64(0)
	if n := testing.AllocsPerRun(1000, func() {
		step++
		e.LinkStep(step, links)
	}); n != 0 {
		t.Errorf("LinkStep allocates %v times a call", n)
	}
	if s := e.Stats(); s.LinksDropped != 1001 || s.LinkStepsLost != 1001-8 {
		t.Errorf("%+v: want 1001 links dropped, %d steps lost", s, 1001-8)
	}
}

func TestOptions(t *testing.T) {
	h := newHub(t)
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{LookupEnv: noEnv}, "no endpoint"},
		{Options{LookupEnv: noEnv, Endpoint: "localhost:4318"}, "scheme"},
		{Options{LookupEnv: noEnv, Endpoint: "grpc://h:4317"}, `scheme "grpc"`},
		{Options{LookupEnv: noEnv, Endpoint: "http://:4318"}, "no host"},
		{Options{LookupEnv: noEnv, Endpoint: "http://collector"}, "no port"},
		{Options{LookupEnv: noEnv, Endpoint: "http://collector:99999"}, `port "99999", want 1..65535`},
		{Options{LookupEnv: noEnv, Endpoint: "http://collector:0"}, `port "0"`},
		{Options{LookupEnv: noEnv, Endpoint: "http://collector:http"}, "port"},
		{Options{LookupEnv: noEnv, Endpoint: "http://u:p@h:1"}, "no user"},
		{Options{LookupEnv: noEnv, Endpoint: "http://h:1", SampleEvery: -1}, "Options.SampleEvery is -1"},
		{Options{LookupEnv: noEnv, Endpoint: "http://h:1", QueueSpans: MaxQueueSpans + 1}, "Options.QueueSpans"},
		{Options{LookupEnv: noEnv, Endpoint: "http://h:1", MaxLinks: -2}, "Options.MaxLinks"},
		{Options{LookupEnv: noEnv, Endpoint: "http://h:1", PollEvery: time.Microsecond}, "Options.PollEvery is 1µs, want 1ms..1h"},
	} {
		e, err := New(context.Background(), h, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v, want an error with %q", c.o, err, c.want)
		}
		if e != nil {
			t.Errorf("New(%+v) returned an exporter with its error", c.o)
		}
	}
	if _, err := New(context.Background(), nil, Options{LookupEnv: noEnv, Endpoint: "http://h:1"}); err == nil {
		t.Error("New with a nil hub succeeded")
	}
	for _, ok := range []string{"http://127.0.0.1:4318", "https://collector.example:443/otlp/v1/traces", "http://[::1]:4318/"} {
		if err := CheckEndpoint("", ok); err != nil {
			t.Errorf("CheckEndpoint(%q): %v", ok, err)
		}
	}
}

// TestPath: an endpoint's path is used as given; none means /v1/traces.
func TestPath(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
	}))
	defer srv.Close()
	for _, p := range []string{"", "/", "/custom/traces"} {
		e, err := New(context.Background(), newHub(t), Options{LookupEnv: noEnv, Endpoint: srv.URL + p})
		if err != nil {
			t.Fatal(err)
		}
		_, s := e.TracerProvider().Tracer("t").Start(context.Background(), "x")
		s.End()
		if err := e.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(paths) != "[/v1/traces /v1/traces /custom/traces]" {
		t.Errorf("posted to %v", paths)
	}
}

// TestPartialSuccess: a collector that rejects some of a batch's spans
// (a 200 with partial_success) costs only those spans, not the batch.
func TestPartialSuccess(t *testing.T) {
	var mu sync.Mutex
	received, requests := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var m coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(data, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				received += len(ss.Spans)
			}
		}
		requests++
		mu.Unlock()
		resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{
			PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 1, ErrorMessage: "one span too old"},
		})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	defer srv.Close()
	e, err := New(context.Background(), newHub(t), Options{LookupEnv: noEnv, Endpoint: srv.URL, BatchSpans: 4, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	tr := e.TracerProvider().Tracer("t")
	for i := 0; i < 10; i++ {
		_, s := tr.Start(context.Background(), "x")
		s.End()
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	mu.Lock()
	defer mu.Unlock()
	if received != 10 || st.ExportErrors != 0 || st.ExportFailed != uint64(requests) || st.Exported != uint64(10-requests) {
		t.Errorf("%d spans in %d requests, each with one rejected: stats %+v", received, requests, st)
	}
}

func TestPartialSuccessParsing(t *testing.T) {
	for _, c := range []struct {
		err      error
		rejected uint64
		ok       bool
	}{
		{nil, 0, false},
		{errors.New("boom"), 0, false},
		{fmt.Errorf("traces export: %w", errors.New("OTLP partial success: too old (3 spans rejected)")), 3, true},
		{errors.Join(errors.New("OTLP partial success: empty message (0 spans rejected)")), 0, true},
		{errors.Join(errors.New("OTLP partial success: a (2 spans rejected)"), errors.New("closing the body")), 0, false},
		{errors.New("OTLP partial success: x (-1 spans rejected)"), 0, false},
	} {
		n, ok := partialSuccess(c.err)
		if n != c.rejected || ok != c.ok {
			t.Errorf("partialSuccess(%v) = %d, %v; want %d, %v", c.err, n, ok, c.rejected, c.ok)
		}
	}
}

// Kernel spans from a kernel tracer (CUPTI in production) reach the
// collector like event-pair ones: under the lane span that contains them,
// with the CUDA graph they were replayed from.
func TestTracedKernels(t *testing.T) {
	rcv := newReceiver(t)
	clock := sim.NewClock(start)
	tracer := new(fake.Tracer)
	h, err := gpuspans.New(gpuspans.Options{
		Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Now: clock.Now, Logf: t.Logf,
		KernelTiming: gpuspans.KernelTimingAuto, KernelTracer: tracer.Opener(),
		KernelWindowSteps: gpuspans.MaxKernelWindowSteps, // one window over every step
	})
	if err != nil {
		t.Fatal(err)
	}
	g := sim.New(sim.Options{Device: 0, Now: clock.Now})
	if err := h.Install(0, laneStream[0], g.Opener()); err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), h, Options{LookupEnv: noEnv, Endpoint: rcv.srv.URL, SampleEvery: 1, PollEvery: time.Hour, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	const steps = 3
	for i := 0; i < steps; i++ {
		h.BeginStep()
		t0 := clock.Now().UnixNano()
		h.LaneBegin(0)
		g.Launch(laneStream[0], 50*time.Microsecond)
		h.LaneEnd(0)
		// The graph's kernel ran inside the lane: no call from the engine.
		if !tracer.Kernel(0, 13, t0+1_000, t0+41_000, "flash_fwd", 7) {
			t.Fatal("collection off on an armed step")
		}
		clock.Advance(time.Millisecond)
	}
	h.BeginStep()
	// A window's spans reach exporters after its close, once its lane's
	// spans after it landed or GPUTimeServedWait passed.
	if err := h.CloseKernelTracer(); err != nil {
		t.Fatal(err)
	}
	h.Harvest()
	clock.Advance(gpuspans.GPUTimeServedWait)
	h.Harvest()
	for i := 0; i < 100 && h.Snapshot().Counters.InFlight > 0; i++ {
		h.Harvest()
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	byID := make(map[string]*tracepb.Span)
	var kernels []*tracepb.Span
	for _, r := range rcv.spans(t) {
		byID[hex.EncodeToString(r.span.SpanId)] = r.span
		if r.span.Name == "kernel flash_fwd" {
			kernels = append(kernels, r.span)
		}
	}
	if len(kernels) != steps {
		t.Fatalf("%d traced kernel spans arrived, want %d", len(kernels), steps)
	}
	for _, k := range kernels {
		parent := byID[hex.EncodeToString(k.ParentSpanId)]
		if parent == nil || !strings.HasPrefix(parent.Name, "lane ") {
			t.Errorf("traced kernel %v: parent %v, want its lane", k.Name, parent)
		} else if a := attrMap(parent.Attributes); a[string(AttrBusy)] != "40000" || a[string(AttrIdle)] != "10000" {
			// The lane's 50 us held the kernel's 40 us.
			t.Errorf("a window's lane span: attributes %v, want %s 40000 and %s 10000", a, AttrBusy, AttrIdle)
		}
		if a := attrMap(k.Attributes); a[string(AttrGraph)] != "7" {
			t.Errorf("traced kernel: attributes %v, want %s 7", a, AttrGraph)
		}
		if d := k.EndTimeUnixNano - k.StartTimeUnixNano; d != 40_000 {
			t.Errorf("traced kernel lasts %d ns, want 40000", d)
		}
	}
}

// noEnv is a LookupEnv that finds nothing: tests do not read the process
// environment.
func noEnv(string) (string, bool) { return "", false }

// mapEnv is a LookupEnv of a map.
func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// A kernel window's step goes out whatever the sampling, its kernels
// with it, its lane span with GPU time in served terms; other steps
// follow SampleEvery.
func TestWindowStepsAlwaysKept(t *testing.T) {
	rcv := newReceiver(t)
	clock := sim.NewClock(start)
	tracer := new(fake.Tracer)
	h, err := gpuspans.New(gpuspans.Options{
		Level: gpuspans.LevelKernel, Now: clock.Now, Logf: t.Logf,
		KernelTiming: gpuspans.KernelTimingAuto, KernelTracer: tracer.Opener(),
		KernelWindowEvery: time.Second, KernelWindowSteps: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	g := sim.New(sim.Options{Device: 0, Now: clock.Now})
	if err := h.Install(0, laneStream[0], g.Opener()); err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), h, Options{LookupEnv: noEnv, Endpoint: rcv.srv.URL, SampleEvery: 16, PollEvery: time.Hour, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	windowSteps := map[uint64]bool{}
	for i := 0; i < 260; i++ {
		h.BeginStep()
		win := h.Snapshot().KernelTiming.Windows.Open
		h.LaneBegin(0)
		if win {
			windowSteps[h.Snapshot().Step] = true
			clock.Advance(30 * time.Microsecond) // the window's cost
		}
		s, end := g.Launch(laneStream[0], 50*time.Microsecond)
		tracer.Kernel(0, 13, s, end, "flash_fwd", 0)
		h.LaneEnd(0)
		clock.Advance(10 * time.Millisecond)
	}
	h.BeginStep()
	h.Harvest()
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(windowSteps) < 3 {
		t.Fatalf("%d window steps, want 3", len(windowSteps))
	}
	lanes, kernels := map[string]map[string]string{}, 0
	for _, r := range rcv.spans(t) {
		a := attrMap(r.span.Attributes)
		switch r.span.Name {
		case "lane " + "prefill":
			lanes[a[string(AttrStep)]] = a
		case "kernel flash_fwd":
			kernels++
		}
	}
	sampled := 0
	for step := uint64(1); step <= 260; step++ {
		if step%16 == 0 && !windowSteps[step] {
			sampled++
		}
	}
	if len(lanes) != sampled+len(windowSteps) {
		t.Errorf("%d lane spans went out, want %d sampled and %d of windows", len(lanes), sampled, len(windowSteps))
	}
	if kernels != len(windowSteps) {
		t.Errorf("%d traced kernels went out, want the %d windows'", kernels, len(windowSteps))
	}
	settled := 0
	for step := range windowSteps {
		a := lanes[fmt.Sprint(step)]
		if a == nil || a[string(AttrBusy)] != "50000" || a[string(AttrIdle)] != "30000" {
			t.Errorf("window step %d: lane attributes %v, want busy 50000 and idle 30000", step, a)
			continue
		}
		if a[string(AttrServed)] == "" {
			continue // the first window has no side before: settled from after
		}
		settled++
		if a[string(AttrServed)] != "50000" || a[string(AttrWindowCost)] != "30000" || a[string(AttrIdleOther)] != "0" || a[string(AttrIdleHost)] != "0" {
			t.Errorf("window step %d: %v, want 50000 served, 30000 the window's cost, no idle", step, a)
		}
	}
	if settled != len(windowSteps) {
		t.Errorf("%d of %d window steps carry served time", settled, len(windowSteps))
	}
}
