package debugpage_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/debugpage"
)

// A script reads the live page's JSON: here the level, the span counts and
// each lane's count.
func Example() {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	stream := gpu.NewStream()
	hub, err := gpuspans.New(gpuspans.Options{Lanes: []string{"prefill", "decode"}, Level: gpuspans.LevelKernel, Now: clock.Now})
	if err != nil {
		panic(err)
	}
	if err := hub.Install(0, stream, gpu.Opener()); err != nil {
		panic(err)
	}
	for step := 0; step < 3; step++ {
		hub.BeginStep()
		hub.LaneBegin(1)
		gpu.Launch(stream, 200*time.Microsecond)
		hub.LaneEnd(1)
		clock.Advance(time.Millisecond)
	}
	hub.Harvest()

	mux := http.NewServeMux()
	debugpage.Register(mux, hub, debugpage.Options{Backend: "simulated GPU", Now: clock.Now})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + debugpage.SnapshotPath)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var page struct {
		Backend  string `json:"backend"`
		Level    string `json:"level"`
		Counters struct {
			Begun  uint64 `json:"begun"`
			Landed uint64 `json:"landed"`
		} `json:"counters"`
		Lanes []struct {
			Name  string `json:"name"`
			Count uint64 `json:"count"`
		} `json:"lanes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		panic(err)
	}
	fmt.Printf("%s, level %s: begun %d, landed %d\n", page.Backend, page.Level, page.Counters.Begun, page.Counters.Landed)
	for _, l := range page.Lanes {
		fmt.Printf("lane %s: %d spans\n", l.Name, l.Count)
	}
	// Output:
	// simulated GPU, level kernel: begun 3, landed 3
	// lane prefill: 0 spans
	// lane decode: 3 spans
}
