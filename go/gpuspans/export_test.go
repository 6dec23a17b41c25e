package gpuspans

// The internal test helpers that the external test files (package
// gpuspans_test) use too.
var (
	NewHubForTest    = newHub
	KernelHubForTest = kernelHub
	NewFakeForTest   = newFake
	InFlightForTest  = inFlight
)

// Streams of the test helpers' hubs.
const (
	LaneStreamForTest   = laneStream
	KernelStreamForTest = kernelStream
)
