#!/usr/bin/env bash
# End-to-end: a real OpenTelemetry Collector receives the demo's spans over
# OTLP/gRPC and OTLP/HTTP. Builds the collector of tools/otelcol (core
# v0.165: the OTLP receiver and the contrib file exporter; a module of its
# own) into a cache reused across runs, starts it on loopback ports writing
# what it receives to a JSON file, and runs the demo (the binary given as
# $1, or one built with go build) against it, a few seconds each:
#   - grpc-flags, http-flags: endpoint and protocol from --otlp and
#     --otlp_protocol, no OTEL_* variable set;
#   - grpc-env, http-env: no OTLP flag at all, everything from OTEL_*
#     (endpoint, protocol, headers, timeout, service name, resource);
#     http-env names the traces endpoint (/v1/traces, used as given) and a
#     traces protocol that beats the generic one;
#   - mismatch-http, mismatch-grpc: OTLP/HTTP sent to the gRPC port and
#     gRPC to the HTTP port: the demo logs a message naming the mismatch
#     and its fix, /metrics counts the failed requests and dropped spans,
#     and the demo still stops on time.
# Then, in the file exporter's JSON, per run (told apart by process.pid):
# the spans the demo says it exported all arrived; every lane span is a
# child of its step's root span and every kernel span of a lane or root in
# the same trace; lane spans link to the run's request spans; the resource
# has service.name (the demo's, or OTEL_SERVICE_NAME over the service.name
# of OTEL_RESOURCE_ATTRIBUTES), the OTEL_RESOURCE_ATTRIBUTES attributes,
# host.name, process.pid, process.executable.name, a service.instance.id
# of its own and telemetry.sdk.*.
# Bounded: every wait has a limit; the collector's cold build takes about
# 3 minutes on 2 cores, a cached one nothing; the runs about a minute.
#
# Usage: tools/e2e/otelcol.sh [path/to/gpuspans]
# Cache: $OTELCOL_CACHE, default the user's gpuspans cache (as
# tools/ci/checks.sh: $GPUSPANS_CACHE, else ~/.cache/gpuspans) /otelcol, so
# that fresh clones (CI's) reuse it: otelcol-<hash of tools/otelcol's
# go.mod, go.sum and main.go, and the Go version>.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mkdir -p "$ARTIFACTS"
command -v go >/dev/null || fail "go is needed to build the collector (tools/otelcol)"
apt_install python3 python3 --no-install-recommends

# The collector, built once per source and Go version.
SRC="$ROOT/tools/otelcol"
CACHE="${OTELCOL_CACHE:-${GPUSPANS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuspans}/otelcol}"
mkdir -p "$CACHE"
key="$( (cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go"; go env GOVERSION) | sha256sum | cut -c1-16)"
OTELCOL="$CACHE/otelcol-$key"
if [[ ! -x "$OTELCOL" ]]; then
  log "building the collector (tools/otelcol) into $OTELCOL: a few minutes cold"
  t0=$SECONDS
  # -mod=readonly: go.sum pins the whole graph; nothing is resolved anew.
  (cd "$SRC" && timeout 1200 go build -mod=readonly -trimpath -o "$OTELCOL.tmp" .) >"$TMP/otelcol-build.log" 2>&1 ||
    { tail -30 "$TMP/otelcol-build.log" >&2; fail "building the collector failed (or took over 20 minutes)"; }
  mv "$OTELCOL.tmp" "$OTELCOL"
  log "built the collector in $((SECONDS - t0))s"
  # Older builds of other sources: keep the newest three.
  ls -1t "$CACHE"/otelcol-* 2>/dev/null | tail -n +4 | xargs -r rm -f
else
  log "collector from the cache: $OTELCOL"
fi

BIN="$(gpuspans_bin "${1:-}")"

GRPC_PORT="$(free_port)"
HTTP_PORT="$(free_port)"
[[ "$GRPC_PORT" != "$HTTP_PORT" ]] || HTTP_PORT="$(free_port)"
OUT="$TMP/spans.jsonl"
COL_LOG="$ARTIFACTS/otelcol.log"
cat >"$TMP/otelcol.yaml" <<YML
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:$GRPC_PORT
      http:
        endpoint: 127.0.0.1:$HTTP_PORT
exporters:
  file:
    path: $OUT
    flush_interval: 100ms
service:
  telemetry: {}
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
YML
cp "$TMP/otelcol.yaml" "$ARTIFACTS/otelcol.yaml"
"$OTELCOL" validate --config="$TMP/otelcol.yaml" >"$TMP/validate.log" 2>&1 || fail "the collector refuses its config: $(cat "$TMP/validate.log")"
"$OTELCOL" --config="$TMP/otelcol.yaml" >"$COL_LOG" 2>&1 &
PIDS+=($!)
COL_PID=$!
wait_for 30 "the collector to start its receivers" grep -q 'Everything is ready' "$COL_LOG"
kill -0 "$COL_PID" 2>/dev/null || fail "the collector exited: $(tail -5 "$COL_LOG")"
log "collector up: OTLP/gRPC on 127.0.0.1:$GRPC_PORT, OTLP/HTTP on 127.0.0.1:$HTTP_PORT"

# The runs' environments: only what each names, no OTEL_* from outside.
declare -a NO_OTEL=()
for v in $(compgen -e | grep '^OTEL_' || true); do NO_OTEL+=(-u "$v"); done
RUN_SECONDS=3

# run_demo NAME [VAR=VALUE...] -- [FLAGS...]: runs the demo for
# RUN_SECONDS with the simulated GPU, one step in 4 sampled and 2 requests
# a step, with the environment and flags given; sets DEMO_PID and leaves
# the demo running (wait_demo waits for it). Its log is
# $ARTIFACTS/demo-NAME.log.
run_demo() {
  local name=$1
  shift
  local -a vars=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do vars+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  DEMO_LOG="$ARTIFACTS/demo-$name.log"
  : >"$DEMO_LOG"
  env "${NO_OTEL[@]}" "${vars[@]}" "$BIN" demo --backend=sim --listen=127.0.0.1:0 --trace= \
    --duration=${RUN_SECONDS}s --rate=200 --otlp_sample_every=4 --requests=2 --status_every=-1 "$@" >"$DEMO_LOG" 2>&1 &
  DEMO_PID=$!
  PIDS+=("$DEMO_PID")
  wait_for 20 "demo $name: its live page URL" grep -q '^live page: http://' "$DEMO_LOG"
  DEMO_URL="$(sed -n 's|^live page: \(http://[^/]*\)/debug/gpuspans.*|\1|p' "$DEMO_LOG" | head -1)"
}

# wait_demo NAME: waits for the demo to exit on its own (--duration, then
# at most 5 s to send the last spans), and checks it said where it sent.
wait_demo() {
  local name=$1
  wait_for $((RUN_SECONDS + 20)) "demo $name to stop by itself" bash -c "! kill -0 $DEMO_PID 2>/dev/null"
  wait "$DEMO_PID" || fail "demo $name exited with status $?: $(tail -5 "$DEMO_LOG")"
  grep -q '^OTLP: [0-9]* spans exported' "$DEMO_LOG" || fail "demo $name printed no OTLP totals: $(tail -5 "$DEMO_LOG")"
}

exported() { sed -n 's/^OTLP: \([0-9]*\) spans exported.*/\1/p' "$1"; }

declare -A PID_OF WANT
# The good runs. Each names what its resource must show (checked below).
for run in grpc-flags http-flags grpc-env http-env; do
  case $run in
  grpc-flags) run_demo $run -- --otlp="http://127.0.0.1:$GRPC_PORT" --otlp_protocol=grpc ;;
  http-flags) run_demo $run -- --otlp="http://127.0.0.1:$HTTP_PORT" --otlp_protocol=http/protobuf ;;
  grpc-env)
    run_demo $run OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$GRPC_PORT" OTEL_EXPORTER_OTLP_PROTOCOL=grpc \
      OTEL_EXPORTER_OTLP_HEADERS="x-e2e-run=grpc-env,x-e2e-note=a%20b" OTEL_EXPORTER_OTLP_TIMEOUT=5000 \
      OTEL_SERVICE_NAME=e2e-grpc-engine \
      OTEL_RESOURCE_ATTRIBUTES="service.name=overridden,deployment.environment.name=ci,e2e.run=grpc-env,e2e.note=a%2Cb" --
    ;;
  http-env)
    run_demo $run OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://127.0.0.1:$HTTP_PORT/v1/traces" \
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf OTEL_EXPORTER_OTLP_PROTOCOL=grpc \
      OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:1" OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=5000 \
      OTEL_RESOURCE_ATTRIBUTES="service.name=e2e-http-engine,service.version=9.9.9,e2e.run=http-env" --
    ;;
  esac
  PID_OF[$run]=$DEMO_PID
  grep -q '^OTLP: ' "$DEMO_LOG" || fail "demo $run did not say where it sends: $(head -5 "$DEMO_LOG")"
  log "$run: $(grep -m1 '^OTLP: ' "$DEMO_LOG")"
  wait_demo $run
  n="$(exported "$DEMO_LOG")"
  ((n > 0)) || fail "demo $run exported no span: $(grep '^OTLP: \|otlp' "$DEMO_LOG" | head -5)"
  grep -q 'gpuspans otlp: export of' "$DEMO_LOG" && fail "demo $run had failed exports: $(grep 'gpuspans otlp' "$DEMO_LOG" | head -3)"
  WANT[$run]=$n
  log "$run: the demo (pid ${PID_OF[$run]}) says $n spans exported"
done

# The mismatches: refused with a message that names the fix, counted on
# /metrics, and no hang (the demo stops on time, its last send bounded).
for run in mismatch-http mismatch-grpc; do
  if [[ $run == mismatch-http ]]; then
    run_demo $run -- --otlp="http://127.0.0.1:$GRPC_PORT" --otlp_protocol=http/protobuf
    want_msg="speaks gRPC, not OTLP/HTTP: use protocol grpc"
  else
    run_demo $run -- --otlp="http://127.0.0.1:$HTTP_PORT" --otlp_protocol=grpc
    want_msg="speaks OTLP/HTTP, not gRPC: use protocol http/protobuf"
  fi
  errors_counted() {
    curl -fsS --max-time 5 "$DEMO_URL/metrics" >"$TMP/metrics-$run.txt" 2>/dev/null || return 1
    grep -qE '^gpuspans_otlp_export_errors_total [1-9]' "$TMP/metrics-$run.txt" &&
      grep -qE '^gpuspans_otlp_spans_dropped_total\{reason="export_failed"\} [1-9]' "$TMP/metrics-$run.txt"
  }
  wait_for $((RUN_SECONDS + 2)) "demo $run: failed exports counted on /metrics" errors_counted
  cp "$TMP/metrics-$run.txt" "$ARTIFACTS/metrics-$run.txt"
  t0=$SECONDS
  wait_demo $run
  grep -q "protocol mismatch: .*$want_msg" "$DEMO_LOG" ||
    fail "demo $run: no message naming the mismatch ('$want_msg'): $(grep -i 'otlp' "$DEMO_LOG" | head -5)"
  [[ "$(exported "$DEMO_LOG")" == 0 ]] || fail "demo $run: spans exported through a mismatched protocol: $(grep '^OTLP: ' "$DEMO_LOG")"
  log "$run: $(grep -m1 -o "protocol mismatch: .*" "$DEMO_LOG" | cut -c1-160)"
  log "$run: $(grep -E '^gpuspans_otlp_(export_errors_total|spans_dropped_total\{reason="export_failed"\})' "$ARTIFACTS/metrics-$run.txt" | tr '\n' ' ')(stopped $((SECONDS - t0))s after the check)"
done

# The file exporter flushes every 100 ms: wait until every run's spans are
# in, then check them.
CHECK="$TMP/check.py"
cat >"$CHECK" <<'PY'
import json, re, socket, sys

path, mode = sys.argv[1], sys.argv[2]
runs = {}  # pid -> (name, want)
for a in sys.argv[3:]:
    name, pid, want = a.split(":")
    runs[pid] = (name, int(want))

def val(v):
    for k in ("stringValue", "intValue", "boolValue", "doubleValue"):
        if k in v:
            return str(v[k]).lower() if k == "boolValue" else str(v[k])
    return json.dumps(v)

def attrs(kvs):
    return {kv["key"]: val(kv.get("value", {})) for kv in kvs or []}

spans = {pid: [] for pid in runs}
resources = {pid: [] for pid in runs}
others = 0
with open(path) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        for rs in json.loads(line).get("resourceSpans", []):
            res = attrs(rs.get("resource", {}).get("attributes"))
            pid = res.get("process.pid")
            if pid not in runs:
                others += 1
                continue
            resources[pid].append(res)
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    spans[pid].append(sp)

if mode == "count":  # exit 0 once every run has all its spans
    sys.exit(0 if all(len(spans[p]) >= runs[p][1] for p in runs) else 1)

host = socket.gethostname()
problems = []
ids = {}
for pid, (name, want) in runs.items():
    got = spans[pid]
    bad = lambda msg: problems.append(f"{name} (pid {pid}): {msg}")
    if len(got) != want:
        bad(f"{len(got)} spans in the collector's file, the demo says {want} exported")
    if not got:
        continue
    # One resource per run, whatever the batch.
    rset = {json.dumps(r, sort_keys=True) for r in resources[pid]}
    if len(rset) != 1:
        bad(f"{len(rset)} different resources: {sorted(rset)[:2]}")
    res = resources[pid][0]
    want_res = {"host.name": host, "process.pid": pid, "telemetry.sdk.language": "go",
                "telemetry.sdk.name": "opentelemetry"}
    if name.endswith("-flags"):
        want_res["service.name"] = "gpuspans-demo"
    elif name == "grpc-env":
        want_res.update({"service.name": "e2e-grpc-engine", "deployment.environment.name": "ci",
                         "e2e.run": "grpc-env", "e2e.note": "a,b"})
    elif name == "http-env":
        want_res.update({"service.name": "e2e-http-engine", "service.version": "9.9.9", "e2e.run": "http-env"})
    for k, v in want_res.items():
        if res.get(k) != v:
            bad(f"resource {k} = {res.get(k)!r}, want {v!r} (resource {res})")
    for k in ("process.executable.name", "telemetry.sdk.version"):
        if not res.get(k):
            bad(f"resource has no {k}: {res}")
    iid = res.get("service.instance.id", "")
    if not re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", iid):
        bad(f"service.instance.id {iid!r}: want a random UUID")
    ids[name] = iid

    by_id = {sp["spanId"]: sp for sp in got}
    names = {}
    for sp in got:
        kind = sp["name"].split(" ")[0]
        names[kind] = names.get(kind, 0) + 1
    for kind in ("gpu", "lane", "kernel", "demo"):
        if not names.get(kind):
            bad(f"no {kind} spans: {names}")
    requests = {sp["spanId"] for sp in got if sp["name"] == "demo request"}
    linked = 0
    for sp in got:
        a = attrs(sp.get("attributes"))
        parent = by_id.get(sp.get("parentSpanId", ""))
        if sp["name"] == "gpu step":
            if sp.get("parentSpanId"):
                bad(f"step root {sp['spanId']} has a parent")
        elif sp["name"].startswith("lane "):
            if parent is None or parent["name"] != "gpu step" or parent["traceId"] != sp["traceId"]:
                bad(f"{sp['name']} of step {a.get('gpuspans.step')}: parent {parent and parent['name']}, want its step root in its trace")
            for l in sp.get("links", []):
                if l["spanId"] in requests:
                    linked += 1
                else:
                    bad(f"{sp['name']}: link to {l['spanId']}, not a request span of this run")
        elif sp["name"].startswith("kernel "):
            if parent is None or not (parent["name"].startswith("lane ") or parent["name"] == "gpu step") or parent["traceId"] != sp["traceId"]:
                bad(f"{sp['name']}: parent {parent and parent['name']}, want a lane or the step root in its trace")
            elif parent["name"].startswith("lane ") and not (int(parent["startTimeUnixNano"]) <= int(sp["startTimeUnixNano"]) and int(sp["endTimeUnixNano"]) <= int(parent["endTimeUnixNano"])):
                bad(f"{sp['name']} lies outside its lane")
        if int(sp["endTimeUnixNano"]) < int(sp["startTimeUnixNano"]):
            bad(f"{sp['name']} ends before it starts")
    if linked == 0:
        bad("no lane span links to a request span")
    print(f"{name}: {len(got)} spans ({', '.join(f'{k} {v}' for k, v in sorted(names.items()))}), {linked} request links; "
          f"service.name {res.get('service.name')}, service.instance.id {iid}, host.name {res.get('host.name')}, process.pid {pid}")
if len(set(ids.values())) != len(ids):
    problems.append(f"service.instance.id shared between runs: {ids}")
if others:
    problems.append(f"{others} resources from processes that are not the good runs (the mismatched runs must send nothing)")
for p in problems:
    print("PROBLEM:", p)
sys.exit(1 if problems else 0)
PY
args=()
for run in grpc-flags http-flags grpc-env http-env; do args+=("$run:${PID_OF[$run]}:${WANT[$run]}"); done
wait_for 20 "the collector's file to hold every exported span" python3 "$CHECK" "$OUT" count "${args[@]}"
sleep 0.5 # a flush more: nothing beyond the counts may arrive
cp "$OUT" "$ARTIFACTS/otelcol-spans.jsonl"
rc=0
python3 "$CHECK" "$OUT" check "${args[@]}" >"$ARTIFACTS/otelcol-check.txt" 2>&1 || rc=$?
while IFS= read -r line; do log "$line"; done <"$ARTIFACTS/otelcol-check.txt"
((rc == 0)) || fail "the collector's spans do not check out (above; $ARTIFACTS/otelcol-spans.jsonl)"
kill -0 "$COL_PID" 2>/dev/null || fail "the collector died: $(tail -5 "$COL_LOG")"
log "PASS in $((SECONDS - E2E_START))s"
