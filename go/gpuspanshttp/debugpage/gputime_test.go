package debugpage

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest/golden"
)

func renderPage(t *testing.T, s *gpuspans.Snapshot) string {
	t.Helper()
	p := newPage(s, s.Options.Lanes, &Options{}, time.Unix(1_700_000_000, 0))
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The page draws the latest window's step: the lane, each stream's
// kernels and the gap between them, with names and times on hover; and
// lists the lanes' busy and idle, the largest gaps and the moved kernels.
func TestPageDrawsGPUTime(t *testing.T) {
	s := golden.FullSnapshot()
	page := renderPage(t, &s)
	for _, want := range []string{
		`<svg class="timeline" data-device="3" data-step="99"`,
		`<text x="4" y="19">lane decode</text>`,
		`<text x="4" y="37">as served</text>`,
		`<text x="4" y="55">stream 7</text>`,
		`<rect class="srv-busy" x="110.0"`,
		`<title>lane decode as served (380us of 420us measured): idle, the host 25.0us</title>`,
		`<title>lane decode as served (380us of 420us measured): the window&#39;s cost 40.0us</title>`,
		`<rect class="lane" x="110.0"`,
		`<title>lane decode: 420us, busy 330us, starting 0ns into the step</title>`,
		`<title>gemm: 200us, starting 0ns into the step</title>`,
		`<title>other: 130us, starting 250us into the step</title>`,
		`<rect class="gap"`, `<title>gap 50.0us between gemm and other</title>`,
		`<table id="gpu-time">`, `<td>86.8%</td>`, // recent busy over served: 330 / 380
		`<td>380us</td><td>40.0us</td><td>330us</td><td>50.0us</td><td>27.3us</td>`, // per settled span: 11 of them `<td class="l">gemm 60%, other 40%</td>`,
		`<table id="gpu-gaps">`, `<table id="gpu-moved">`, `<td class="nonzero">100us</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<rect class="kernel"`); n != 2 {
		t.Errorf("%d kernels drawn, want 2", n)
	}
	// Before any window: said, not drawn as zero.
	s.GPUTime = gpuspans.GPUTime{}
	page = renderPage(t, &s)
	if strings.Contains(page, `class="timeline"`) || !strings.Contains(page, `id="gpu-time-none"`) {
		t.Error("a page without kernel windows draws GPU time or does not say why there is none")
	}
}

// Since the last build: the lane against the previous build's, its verdict
// and the kernels that changed; a profile never written says why.
func TestPageSinceTheLastBuild(t *testing.T) {
	s := golden.FullSnapshot()
	page := renderPage(t, &s)
	for _, want := range []string{
		`<h2>Since the last build</h2>`, `This build: <b>v2</b>`, `Compared with build <b>v1</b>.`,
		`<table id="profile-since">`, `<td class="l nonzero">WORSE</td>`,
		`1250.0 us → 1400.0 us (&#43;12.0%)`, `gemm_256x128: grew 400.0 us → 550.0 us (&#43;37.5%)`,
		`rms_norm (launch 17): grew 3.0 us → 6.1 us (&#43;103.3%)`,
		`flash_fwd_sm90: new, 30.0 us`, `flash_fwd_sm80: gone, was 32.0 us`,
		`Not compared: lane &#34;prefill&#34;`, `at 5% for a lane and 10% and 2.0 us for a kernel`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	s.Profile = gpuspans.ProfileStatus{Path: "/p", Build: "v2", Running: true, Ignored: "cannot be read", WriteErr: "not written: the file there is not a profile: never replaced"}
	page = renderPage(t, &s)
	if !strings.Contains(page, "Not written: not written: the file there is not a profile") || strings.Contains(page, "not written yet") ||
		!strings.Contains(page, "is not compared with: cannot be read") {
		t.Errorf("a profile never written:\n%s", page[strings.Index(page, "Since the last build"):][:600])
	}
	s.Profile = gpuspans.ProfileStatus{}
	if strings.Contains(renderPage(t, &s), "Since the last build") {
		t.Error("a page without a profile has the section")
	}
}
