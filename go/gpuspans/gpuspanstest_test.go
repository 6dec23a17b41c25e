package gpuspans_test

import (
	"testing"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
)

// Hands package gpuspans's own tests the helpers of gpuspanstest (see
// helpers_test.go).
func init() {
	gpuspans.CheckBalance = func(t testing.TB, s *gpuspans.Snapshot) {
		t.Helper()
		gpuspanstest.CheckAccounting(t, s)
	}
	gpuspans.NewLog = func() gpuspans.Log { return new(gpuspanstest.Log) }
}
