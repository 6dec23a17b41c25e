package gpuspans

import (
	"testing"

	"github.com/gpuspans/gpuspans/go/internal/spanring/spanringtest"
)

// maxFuzzCalls bounds the choices one input makes, so each run stays quick.
const maxFuzzCalls = 4096

// FuzzHubCalls plays the fuzzer's bytes as a sequence of hub calls on counting
// fakes, against the ring's model as model_test.go drives it: the first byte
// picks the ring size (1 to 16 slots), each later byte one choice of
// spanringtest.Ops (which call, which lane, which span to end, ...). The hub must never panic, must agree with the
// model after every call, and its accounting must balance (Begun == Landed +
// dropped + InFlight + Errored); the fakes fail the run on any breach of the
// backend contract, such as a call after Close or after a sticky error. The
// committed corpus is in testdata/fuzz/FuzzHubCalls (plain `go test`
// replays it); run with
//
//	go test -run='^$' -fuzz=FuzzHubCalls -fuzztime=3m ./go/gpuspans/
func FuzzHubCalls(f *testing.F) {
	f.Add([]byte{7, 0, 26, 0, 1, 70, 64})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		slots := 1 + int(data[0]%16)
		data = data[1:]
		if len(data) > maxFuzzCalls {
			data = data[:maxFuzzCalls]
		}
		runModel(t, slots, spanringtest.NewOpsFrom(func(n int) (int, bool) {
			if len(data) == 0 {
				return 0, false
			}
			b := data[0]
			data = data[1:]
			return int(b) % n, true
		}, 2), maxFuzzCalls)
	})
}
