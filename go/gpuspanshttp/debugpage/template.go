package debugpage

// pageHTML is the page template. Everything inside <main id="live"> is
// what the refresh swaps; the script only fetches this same page, so the
// server stays the one place that renders.
const pageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}{{if .Backend}}: {{.Backend}}{{end}}</title>
{{if .RefreshMS}}<noscript><meta http-equiv="refresh" content="{{secs .RefreshMS}}"></noscript>{{end}}
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{display:flex;gap:1em;align-items:baseline;padding:.6em 1.2em;background:#1d2330;color:#fff}
header h1{font-size:1.2em;margin:0}
header .backend{opacity:.8}
#status{margin-left:auto;font-size:.9em;opacity:.8}
#status.stale{color:#ffb4a8;opacity:1}
main{padding:0 1.2em 1em}
h2{font-size:1.05em;margin:1.2em 0 .4em}
.facts{display:flex;flex-wrap:wrap;gap:.5em 1.6em;margin:.8em 0}
.facts div{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:.35em .8em}
.facts b{display:block;font-size:1.15em}
.facts span{font-size:.85em;color:#5b6474}
.grid{display:flex;flex-wrap:wrap;gap:.8em}
figure{margin:0;background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:.5em .6em}
figcaption{font-size:.9em;margin-bottom:.2em}
figcaption span{color:#5b6474}
svg.hist .bar{fill:#4a7bd0}
svg.hist .bar.over{fill:#c0504d}
svg.hist .bar:hover{fill:#2a4f93}
svg.hist .axis{stroke:#8a93a3;stroke-width:1}
svg.hist text{font-size:10px;fill:#5b6474}
svg.hist .marker{stroke-width:1.2;stroke-dasharray:3 2}
svg.hist .marker.p50{stroke:#2e8b57}
svg.hist .marker.p99{stroke:#d2691e}
svg.hist text.p50{fill:#2e8b57}
svg.hist text.p99{fill:#d2691e}
svg.timeline .lane{fill:#c9d7f0}
svg.timeline .kernel{fill:#4a7bd0}
svg.timeline .gap{fill:#c0504d}
svg.timeline .srv-busy{fill:#4a7bd0}
svg.timeline .cause-host{fill:#c0504d}
svg.timeline .cause-launch{fill:#e39b3a}
svg.timeline .cause-copy{fill:#5a9e5a}
svg.timeline .cause-wait{fill:#8064a2}
svg.timeline .cause-other{fill:#a0a0a0}
svg.timeline .cost{fill:#eeeeee;stroke:#bbbbbb}
svg.timeline rect:hover{opacity:.7}
svg.timeline .axis{stroke:#8a93a3;stroke-width:1}
svg.timeline text{font-size:10px;fill:#5b6474}
svg.trend .axis{stroke:#8a93a3;stroke-width:1}
svg.trend text{font-size:10px;fill:#5b6474}
svg.trend path{fill:none;stroke-width:1.5}
svg.trend path.p50{stroke:#2e8b57}
svg.trend path.p99{stroke:#d2691e}
svg.trend text.p50{fill:#2e8b57}
svg.trend text.p99{fill:#d2691e}
table{border-collapse:collapse;background:#fff;border:1px solid #dde1e8}
th,td{padding:.25em .7em;border-bottom:1px solid #eceef2;text-align:right}
th{background:#eef0f4;font-weight:600}
td.l,th.l{text-align:left}
td.help{text-align:left;color:#5b6474;font-size:.9em}
.nonzero{color:#b3261e;font-weight:600}
.state-open{color:#2e8b57;font-weight:600}
.state-failed,.state-dead{color:#b3261e;font-weight:600}
code{background:#eef0f4;padding:.1em .3em;border-radius:3px}
footer{padding:0 1.2em 1.5em;color:#5b6474;font-size:.9em}
</style>
</head>
<body>
<header><h1>gpuspans</h1>{{if .Backend}}<span class="backend">{{.Backend}}</span>{{end}}<span id="status">{{if .RefreshMS}}live, every {{secs .RefreshMS}} s{{else}}not refreshing{{end}}</span></header>
<main id="live" data-updated="{{.Time}}">
<div class="facts">
<div><span>level</span><b id="level">{{.Snap.Level}}</b></div>
<div><span>kernel spans armed</span><b id="kernel-span-every">1 step in {{.Snap.KernelSpanEvery}}</b></div>
<div><span>armed ratio</span><b id="armed-ratio">{{pct .Snap.ArmedRatio}}</b><span>{{.ArmedText}}</span></div>
<div><span>steps</span><b>{{.Snap.Step}}</b></div>
<div><span>spans landed</span><b>{{.Snap.Counters.Landed}}</b><span>of {{.Snap.Counters.Begun}} begun</span></div>
<div><span>in flight</span><b>{{.Snap.Counters.InFlight}}</b></div>
<div id="dropped"><span>spans dropped</span><b{{if .DropCard.Alarm}} class="nonzero"{{end}}>{{.DropCard.Total}}</b><span>{{.DropCard.Share}} of begun, capturing aside; {{.DropCard.Recent}}</span></div>
<div><span>errored</span><b{{if .Snap.Counters.Errored}} class="nonzero"{{end}}>{{.Snap.Counters.Errored}}</b></div>
<div id="kernel-timing"><span>kernel timing</span><b>{{.Snap.KernelTiming.Mode}}</b><span>{{if .Snap.KernelTiming.Tracing}}from CUPTI{{else}}event pairs{{end}}{{with .Snap.KernelTiming.Reason}}: {{.}}{{end}}</span></div>
{{with .Snap.KernelTiming.Windows}}{{if .Opened}}<div id="kernel-windows"><span>kernel windows</span><b>{{.Opened}}</b><span>{{if .Open}}one open now; {{end}}{{if .Last.Seq}}the last: {{.Last.Kernels}} kernels in {{.Last.Steps}} step{{if ne .Last.Steps 1}}s{{end}} from step {{.Last.FirstStep}}; {{end}}open {{ms (index .OpenNs 0)}} ms, close {{ms (index .CloseNs 0)}} ms (p50){{if .Skipped}}; {{.Skipped}} skipped{{end}}{{if .SkippedGuard}} ({{.SkippedGuard}} for the launch guard){{end}}{{with .Guard}}{{if .Holder}}; the launch guard held by thread {{.Holder}} for {{ms .HeldNs}} ms{{end}}{{if .UnmatchedExits}}; {{.UnmatchedExits}} unmatched guard exits refused (thread {{.UnmatchedThread}}){{end}}{{end}}</span></div>{{end}}{{end}}
<div><span>updated</span><b>{{.Time}}</b></div>
</div>

<h2>Lane latency</h2>
<div class="grid">{{range .Lanes}}{{template "hist" .}}{{end}}</div>

{{if .Trends}}<h2>Lane latency over time</h2>
<div class="grid">{{range .Trends}}<figure>
<figcaption><b>{{.Label}}</b> <span>p50 and p99 per 10-second window, the last {{.Span}}</span></figcaption>
<svg class="trend" data-name="{{.Name}}" data-device="{{.Device}}" data-windows="{{.Windows}}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {{.Width}} {{.Height}}" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="lane {{.Label}}: p50 and p99 in each of {{.Windows}} recent windows">
<line class="axis" x1="{{.PlotLeft}}" y1="{{.Base}}" x2="{{.PlotRight}}" y2="{{.Base}}"/>
<line class="axis" x1="{{.PlotLeft}}" y1="{{.PlotTop}}" x2="{{.PlotLeft}}" y2="{{.Base}}"/>
<text x="{{.PlotLeft}}" y="{{.PlotTop}}" dx="-4" dy="4" text-anchor="end">{{.YMax}}</text>
<text x="{{.PlotLeft}}" y="{{.Base}}" dx="-4" text-anchor="end">0</text>
<text x="{{.PlotLeft}}" y="{{.Base}}" dy="13">-{{.Span}}</text>
<text x="{{.PlotRight}}" y="{{.Base}}" dy="13" text-anchor="end">now</text>
<text class="p99" x="{{.PlotRight}}" y="{{.PlotTop}}" dy="-5" text-anchor="end">p99</text>
<text class="p50" x="{{.PlotRight}}" y="{{.PlotTop}}" dx="-24" dy="-5" text-anchor="end">p50</text>
<path class="p99" d="{{.P99}}"/>
<path class="p50" d="{{.P50}}"/>
</svg>
</figure>{{end}}</div>
{{end}}
<h2>Where the GPU's time went</h2>
{{with .GPU}}<table id="gpu-time">
<tr><th>gpu</th><th class="l">lane</th><th>busy (recent)</th><th>spans measured</th><th>span in a window</th><th>of it between kernels</th><th>served</th><th>window's cost</th><th>busy</th><th>idle</th><th>host</th><th>launch</th><th>copy</th><th>wait</th><th>other</th><th>unsettled windows</th><th class="l">top kernels</th></tr>
{{range .Lanes}}<tr><td>{{.Device}}</td><td class="l">{{.Lane}}</td><td>{{.Ratio}}</td><td>{{.Spans}}</td><td>{{.Span}}</td><td>{{.Gaps}}</td><td>{{.Served}}</td><td>{{.Cost}}</td><td>{{.Busy}}</td><td>{{.Idle}}</td><td>{{.Host}}</td><td>{{.Launch}}</td><td>{{.Copy}}</td><td>{{.Wait}}</td><td>{{.Other}}</td><td>{{.Unsettled}}</td><td class="l">{{.Kernels}}</td></tr>
{{end}}</table>
<p><small>From {{.Windows}} kernel windows, per span. A window slows the step it measures, so each lane span is set against the lane's time outside windows around it: served; the rest is the window's cost. Busy is the time some kernel of the device ran inside the span (every stream), idle the rest of the served time, by cause: the host (the GPU ran out of work before the next launch returned), launch latency, copies, waits on another stream or event, other. A window whose lane time moved by more than 10% across it is unsettled, left out of these. The span and its gaps between kernels are as the window measured them. Outside windows nothing is known.</small></p>
<div class="grid">{{range .Timelines}}<figure>
<figcaption><b>{{.Label}}</b> <span>the latest window's step: {{.Extent}}, {{.Kernels}} kernels{{if .Cut}} ({{.Cut}} more not drawn){{end}}; hover for names and times</span></figcaption>
<svg class="timeline" data-device="{{.Device}}" data-step="{{.Step}}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {{.Width}} {{.Height}}" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="timeline of step {{.Step}}: lanes, kernels by stream, gaps">
{{range .Rows}}<text x="4" y="{{.Y}}">{{.Text}}</text>
{{end}}{{range .Rects}}<rect class="{{.Class}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"><title>{{.Title}}</title></rect>
{{end}}<line class="axis" x1="{{.PlotLeft}}" y1="{{.Base}}" x2="{{.PlotRight}}" y2="{{.Base}}"/>
{{$base := .Base}}{{range .Ticks}}<text x="{{f .X}}" y="{{$base}}" dy="13" text-anchor="middle">{{.Label}}</text>
{{end}}</svg>
</figure>{{end}}</div>
{{if .Gaps}}<table id="gpu-gaps">
<tr><th>gpu</th><th class="l">lane</th><th>step</th><th>gap</th><th class="l">after</th><th class="l">before</th></tr>
{{range .Gaps}}<tr><td>{{.Device}}</td><td class="l">{{.Lane}}</td><td>{{.Step}}</td><td>{{.Gap}}</td><td class="l">{{.Before}}</td><td class="l">{{.After}}</td></tr>
{{end}}</table>{{end}}
{{if .Moved}}<h2>Kernels that moved</h2><table id="gpu-moved">
<tr><th>gpu</th><th class="l">lane</th><th class="l">kernel</th><th>launch</th><th>an hour's baseline</th><th>now</th><th>grew</th></tr>
{{range .Moved}}<tr><td>{{.Device}}</td><td class="l">{{.Lane}}</td><td class="l">{{.Kernel}}</td><td>{{.Launch}}</td><td>{{.Baseline}}</td><td>{{.Recent}}</td><td class="nonzero">{{.Grew}}</td></tr>
{{end}}</table>
<p><small>Per lane span, averaged over windows: now with a half-life of a minute, the baseline of an hour; a launch is the kernel's n-th in the lane span.</small></p>{{end}}
{{else}}<p id="gpu-time-none">No kernel window has measured a lane yet: kernel timing auto or cupti, at level kernel. Outside windows nothing is known.</p>{{end}}

{{with .Profile}}<h2>Since the last build</h2>
<p id="profile">This build: <b>{{.Build}}</b>, profile <code>{{.Path}}</code>, {{.Windows}} windows{{if .Written}}, written {{.Written}}{{else if not .WriteErr}}, not written yet (once a lane has {{.MinWindows}} windows){{end}}.{{if .WriteErr}} <span class="nonzero">Not written: {{.WriteErr}}</span>{{end}}
{{if .Before}}Compared with build <b>{{.Before}}</b>.{{else if .Ignored}}The profile found there is not compared with: {{.Ignored}}{{else}}No profile of another build was found there.{{end}}</p>
{{if .Lanes}}<table id="profile-since">
<tr><th class="l">lane</th><th class="l">device</th><th>windows (before / now)</th><th>time per step</th><th>busy per step</th><th class="l">verdict</th><th class="l">kernels that changed, per step</th></tr>
{{range .Lanes}}<tr><td class="l">{{.Lane}}</td><td class="l">{{.Model}}</td><td>{{.Windows}}</td><td{{if .TimeMoved}} class="nonzero"{{end}}>{{.Time}}</td><td{{if .BusyMoved}} class="nonzero"{{end}}>{{.Busy}}</td><td class="l{{if .Worse}} nonzero{{end}}">{{.Verdict}}</td><td class="l">{{range $i, $k := .Kernels}}{{if $i}}<br>{{end}}{{$k}}{{end}}</td></tr>
{{end}}</table>
<p><small>Time per step is the lane's time outside kernel windows, busy the time kernels ran inside it, both averaged over windows; a change counts (shown red) at {{.LaneRatio}} for a lane and {{.KernelRatio}} and {{.KernelMin}} for a kernel, when a Welch t-test over the windows also rejects chance at three standard errors (for kernels, shared among the lane's).</small></p>{{else if .Before}}<p>Not compared yet: a lane needs {{.MinWindows}} windows in both builds.</p>{{end}}
{{range .Skipped}}<p><small>Not compared: {{.}}</small></p>{{end}}
{{end}}
{{with .Requests}}<h2>Whose GPU time</h2>
<p id="requests">{{.InFlight}} requests held, {{.Finished}} finished.{{if .Lost}} <span class="nonzero">{{.Lost}}.</span>{{end}}</p>
{{if .Classes}}<table id="request-classes">
<tr><th class="l">class</th><th>share</th><th>GPU time</th><th>input</th><th>output</th><th>busy</th><th>tokens (new / decoded)</th><th>GPU s per million (in / out)</th><th>finished</th><th>per request p50</th><th>p99</th></tr>
{{range .Classes}}<tr><td class="l">{{.Class}}</td><td>{{.Share}}</td><td>{{.GPU}}</td><td>{{.Input}}</td><td>{{.Output}}</td><td>{{.Busy}}</td><td>{{.Tokens}}</td><td>{{.PerMillion}}</td><td>{{.Finished}}</td><td>{{.P50}}</td><td>{{.P99}}</td></tr>
{{end}}</table>{{end}}
{{if .Heaviest}}<table id="request-heaviest">
<tr><th>request</th><th class="l">class</th><th>GPU time</th><th>busy</th><th>input</th><th>output</th><th>spans</th><th>tokens (new / decoded)</th><th class="l">lanes</th><th class="l">note</th></tr>
{{range .Heaviest}}<tr><td>{{.ID}}</td><td class="l">{{.Class}}</td><td>{{.GPU}}</td><td>{{.Busy}}</td><td>{{.Input}}</td><td>{{.Output}}</td><td>{{.Steps}}</td><td>{{.Tokens}}</td><td class="l">{{.Lanes}}</td><td class="l">{{.Note}}</td></tr>
{{end}}</table>{{end}}
<table id="request-lanes">
<tr><th>gpu</th><th class="l">lane</th><th class="l">cost model</th><th>fixed</th><th>a token</th><th>a context token</th><th>a pair</th><th>residual</th><th>spans split</th><th>by the model</th><th>time split</th><th>busy</th><th>windows' cost, not split</th><th>spans with no request said</th><th class="l">achieved</th></tr>
{{range .Lanes}}<tr><td>{{.Device}}</td><td class="l">{{.Lane}}</td><td class="l">{{.Status}}</td><td>{{.Fixed}}</td><td>{{.PerToken}}</td><td>{{.PerContext}}</td><td>{{.PerPair}}</td><td>{{.Residual}}</td><td>{{.Split}}</td><td>{{.ByModel}}</td><td>{{.Time}}</td><td>{{.Busy}}</td><td>{{.WindowCost}}</td><td>{{.Unattributed}}</td><td class="l">{{.Achieved}}</td></tr>
{{end}}</table>
<p><small>Every lane span is split among the requests the engine said it served, the parts adding up to the span: by the lane's cost model (a fixed cost per step shared equally, and costs per token, per context token read and per attention pair, fitted to the lane's own steps), or by tokens while the model is fitting, undetermined (the steps cannot price apart what tells the requests apart: all batches alike) or unexplained. Input is the share of each span spent on new tokens, output on decoded ones. A kernel window's step is split at the lane's time outside windows: the window's cost is no request's. Busy comes from each lane's busy ratio where windows measured it. The heaviest are of the latest finished requests.</small></p>
{{end}}
<h2>Kernel latency</h2>
{{if .Kernels}}<div class="grid">{{range .Kernels}}{{template "hist" .}}{{end}}</div>
{{else}}<p>No kernel span yet: they are recorded on one step in {{.Snap.KernelSpanEvery}}, at level kernel.</p>{{end}}

<h2>Summary</h2>
{{if .Rows}}<table id="summary">
<tr><th></th><th></th>{{if .Multi}}<th></th>{{end}}<th colspan="5">since start</th>{{range .Windows}}<th colspan="3">{{.}}</th>{{end}}</tr>
<tr><th class="l">kind</th><th class="l">name</th>{{if .Multi}}<th>gpu</th>{{end}}<th>count</th><th>p50</th><th>p99</th><th>max</th><th>mean</th>{{range .Windows}}<th>count</th><th>p50</th><th>p99</th>{{end}}</tr>
{{range .Rows}}<tr><td class="l">{{.Kind}}</td><td class="l">{{.Name}}</td>{{if $.Multi}}<td>{{.Device}}</td>{{end}}<td>{{.Count}}</td><td>{{.P50}}</td><td>{{.P99}}</td><td>{{.Max}}</td><td>{{.Mean}}</td>{{range .Recent}}<td>{{.Count}}</td><td>{{.P50}}</td><td>{{.P99}}</td>{{end}}</tr>
{{end}}</table>
<p><small>Lanes and registered kernels with no span read zero. Recent windows are the hub's own 10-second windows begun in the last minute and five minutes, kept whether or not this page is open; one still filling says how far back the hub's reach. p50 and p99 are estimated within 1.1% (the hub's buckets are 2.2% wide; the charts draw eight to a bar); max and mean are exact.</small></p>
{{else}}<p>No span has landed yet.</p>{{end}}

<h2>Drops and errors</h2>
<table id="drops">
<tr><th class="l">counter</th><th>spans</th><th class="l">meaning</th></tr>
{{range .Dropped}}<tr><td class="l">dropped: {{.Name}}</td><td{{if and .Value .Alarm}} class="nonzero"{{end}}>{{.Value}}</td><td class="help">{{.Help}}</td></tr>
{{end}}<tr><td class="l">errored</td><td{{if .Snap.Counters.Errored}} class="nonzero"{{end}}>{{.Snap.Counters.Errored}}</td><td class="help">a driver call failed for the span (the first failure is logged)</td></tr>
{{range .Misuse}}<tr><td class="l">{{.Name}}</td><td{{if and .Value .Alarm}} class="nonzero"{{end}}>{{.Value}}</td><td class="help">{{.Help}}</td></tr>
{{end}}<tr><td class="l">harvests</td><td>{{.Snap.Counters.Harvests}}</td><td class="help">{{.Snap.Counters.HarvestsSkipped}} skipped because the harvest lock was held; never waiting for the GPU</td></tr>
</table>

<h2>Devices</h2>
{{if .Snap.Devices}}<table id="devices">
<tr><th>gpu</th><th class="l">state</th><th class="l">name</th><th class="l">uuid</th><th class="l">pci bus id</th><th class="l">cuda driver</th><th>event offset</th><th>slots</th><th>in flight</th><th class="l">stream</th><th class="l">reason</th></tr>
{{range .Snap.Devices}}<tr><td>{{.Device}}</td><td class="l state-{{.State}}">{{.State}}</td><td class="l">{{.Name}}</td><td class="l"><code>{{.UUID}}</code></td><td class="l"><code>{{.PCIBusID}}</code></td><td class="l">{{.Driver}}</td><td>{{if ge .EventOffsetNs 0}}{{.EventOffsetNs}} ns{{else}}&ndash;{{end}}</td><td>{{.Slots}}</td><td>{{.InFlight}}</td><td class="l"><code>{{printf "%#x" .Stream}}</code></td><td class="l">{{.Reason}}</td></tr>
{{end}}</table>
{{else}}<p>No device installed.</p>{{end}}
</main>
<footer>
<p>Change settings at run time (plain text body, or JSON with <code>Content-Type: application/json</code>; add <code>-H "Authorization: Bearer $GPUSPANS_TOKEN"</code> when the server has a token):<br>
<code>curl -X PUT --data step http://{{.Host}}/control/level</code> &nbsp;
<code>curl -X PUT --data 4 http://{{.Host}}/control/kernel_span_every</code></p>
<p>Also: <a href="/metrics">/metrics</a> (Prometheus) · <a href="/debug/gpuspans/snapshot.json">snapshot.json</a> · <a href="?refresh=0">stop refreshing</a></p>
</footer>
<script>
(function () {
  var ms = {{.RefreshMS}};
  if (!ms) return;
  var status = document.getElementById("status");
  setInterval(function () {
    fetch(location.href, {cache: "no-store"}).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (t) {
      var next = new DOMParser().parseFromString(t, "text/html").getElementById("live");
      var cur = document.getElementById("live");
      if (next && cur) cur.replaceWith(next);
      status.textContent = "live, every " + ms / 1000 + " s; updated " + next.dataset.updated;
      status.className = "";
    }).catch(function (e) {
      status.textContent = "not updating (" + e.message + "); showing " + document.getElementById("live").dataset.updated;
      status.className = "stale";
    });
  }, ms);
})();
</script>
</body>
</html>
{{define "hist"}}<figure>
<figcaption><b>{{.Label}}</b> <span>{{.Count}} spans{{if .Count}} · p50 {{.P50}} · p99 {{.P99}} · max {{.Max}}{{end}}</span></figcaption>
<svg class="hist" data-kind="{{.Kind}}" data-name="{{.Name}}" data-device="{{.Device}}" data-count="{{.Count}}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {{.Width}} {{.Height}}" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="{{.Kind}} {{.Label}}: histogram of {{.Count}} span durations">
<line class="axis" x1="{{.PlotLeft}}" y1="{{.Base}}" x2="{{.PlotRight}}" y2="{{.Base}}"/>
<line class="axis" x1="{{.PlotLeft}}" y1="{{.PlotTop}}" x2="{{.PlotLeft}}" y2="{{.Base}}"/>
<text x="{{.PlotLeft}}" y="{{.PlotTop}}" dx="-4" dy="4" text-anchor="end">{{.YMax}}</text>
<text x="{{.PlotLeft}}" y="{{.Base}}" dx="-4" text-anchor="end">0</text>
{{range .Bars}}<rect class="bar{{if .Overflowing}} over{{end}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}" data-count="{{.Count}}"><title>{{.Title}}</title></rect>
{{end}}{{range .Ticks}}<line class="axis" x1="{{f .X}}" y1="{{$.Base}}" x2="{{f .X}}" y2="{{$.TickMark}}"/><text x="{{f .X}}" y="{{$.TickY}}" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .Markers}}<line class="marker {{.Name}}" x1="{{f .X}}" y1="{{$.PlotTop}}" x2="{{f .X}}" y2="{{$.Base}}"><title>{{.Name}} {{.Value}}</title></line>
<text class="{{.Name}}" x="{{f .X}}" y="{{$.PlotTop}}" dy="-5" text-anchor="{{.Anchor}}">{{.Name}}</text>
{{end}}{{if not .Count}}<text x="{{.PlotLeft}}" y="{{.PlotTop}}" dx="12" dy="30">no spans yet</text>
{{end}}</svg>
</figure>
{{end}}`
