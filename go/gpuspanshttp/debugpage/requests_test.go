package debugpage

import (
	"strings"
	"testing"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest/golden"
)

// The page lists whose GPU time: the classes with their share and cost
// per million tokens, the heaviest requests, and each lane's cost model;
// before any request, nothing.
func TestPageShowsWhoseGPUTime(t *testing.T) {
	s := golden.FullSnapshot()
	page := renderPage(t, &s)
	for _, want := range []string{
		`<h2>Whose GPU time</h2>`, `3 requests held, 5 finished.`,
		`<table id="request-classes">`, `<td class="l">model llama, adapter lora-7, tenant acme</td><td>100.0%</td><td>9.00ms</td><td>6.00ms</td><td>3.00ms</td><td>87.5%</td><td>512 / 16</td><td>11.7 s / 188 s</td>`,
		`<table id="request-heaviest">`, `<td>42</td>`, `abandoned: never ended`,
		`<table id="request-lanes">`, `<td class="l">ok</td><td>300us</td><td>40 ns</td><td>3 ns</td><td>0.02 ns</td><td>1.0%</td><td>120</td><td>88 (73%)</td>`,
		`102.6 TFLOP/s`, `(10.4% of peak)`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	s.Requests = gpuspans.RequestAttribution{}
	if page = renderPage(t, &s); strings.Contains(page, "Whose GPU time") {
		t.Error("a page without requests shows whose GPU time")
	}
}
