// Command server is the smallest serving loop that uses gpuspans as a
// library, built from another Bazel workspace: it installs a CUDA recorder
// for device 0 (without a GPU the pool fails to open, spans stay off, and
// the loop runs on), brackets each step's lanes with spans, serves the hub
// over HTTP (/metrics, the live page, the control endpoints) while it runs
// and prints the snapshot's counters.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/control"
)

func main() {
	steps := flag.Int("steps", 100, "engine steps to run")
	listen := flag.String("listen", "127.0.0.1:0", "address to serve /metrics, the live page and /control on")
	flag.Parse()

	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel})
	if err != nil {
		log.Fatalf("server: %v", err)
	}
	// Stream 0 is the legacy default stream; an engine passes its own.
	if err := hub.Install(0, 0, cuda.Opener(0)); err != nil {
		log.Fatalf("server: %v", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("server: %v", err)
	}
	// Without a token the control endpoints may only listen on loopback.
	if err := control.CheckListen(ln.Addr(), ""); err != nil {
		log.Fatalf("server: %v", err)
	}
	srv := gpuspanshttp.NewServer(gpuspanshttp.New(hub, gpuspanshttp.Options{Backend: "CUDA device 0"}), nil)
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Printf("serving http://%s/debug/gpuspans\n", ln.Addr())

	for i := 0; i < *steps; i++ {
		hub.BeginStep()
		for lane := range hub.Lanes() {
			hub.LaneBegin(lane)
			time.Sleep(100 * time.Microsecond) // the engine's work on the lane
			hub.LaneEnd(lane)
		}
	}
	s := hub.Snapshot()
	fmt.Printf("steps=%d landed=%d dropped=%d errored=%d\n",
		s.Step, s.Counters.Landed, s.Counters.DroppedTotal(), s.Counters.Errored)
	for _, d := range s.Devices {
		if d.Err != nil {
			fmt.Printf("device %d: %s: %v\n", d.Device, d.State, d.Err)
		} else {
			fmt.Printf("device %d: %s\n", d.Device, d.State)
		}
	}
}
