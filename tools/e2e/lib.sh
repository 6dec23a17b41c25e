# Shared by the end-to-end scripts in this directory: sourced, not run.
# Each script stays self-contained otherwise: it builds or takes the
# binary, starts what it needs on loopback, waits with a bound, and cleans
# up on exit.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ARTIFACTS="${ARTIFACTS:-$ROOT/out/e2e}"
TMP="$(mktemp -d)"
PIDS=()
E2E_START=$SECONDS

log() { echo "[$(basename "$0") +$((SECONDS - E2E_START))s] $*"; }
fail() {
  echo "[$(basename "$0") +$((SECONDS - E2E_START))s] FAIL: $*" >&2
  exit 1
}

cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    # Bounded: a process that ignores SIGTERM gets SIGKILL after 10 s.
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT

# wait_for SECONDS DESCRIPTION COMMAND...: runs COMMAND every 0.2 s until it
# succeeds, failing after SECONDS.
wait_for() {
  local limit=$1 what=$2
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@"; do
    ((SECONDS < deadline)) || fail "timed out after ${limit}s waiting for $what"
    sleep 0.2
  done
}

# apt_install PACKAGE BINARY [APT-GET ARGS...]: installs a Debian package
# when BINARY is missing, as root; otherwise says what to install. Runs
# apt-get update only when the first install fails (stale lists).
apt_install() {
  local pkg=$1 bin=$2
  shift 2
  command -v "$bin" >/dev/null && return 0
  [[ $(id -u) -eq 0 ]] || fail "$bin not found: install it (apt-get install $pkg) or run as root"
  log "installing $pkg (apt-get)"
  local t0=$SECONDS
  export DEBIAN_FRONTEND=noninteractive
  if ! timeout 900 apt-get install -y "$@" "$pkg" >"$TMP/apt.log" 2>&1; then
    timeout 300 apt-get update >>"$TMP/apt.log" 2>&1 || true
    timeout 900 apt-get install -y "$@" "$pkg" >>"$TMP/apt.log" 2>&1 ||
      { tail -20 "$TMP/apt.log" >&2; fail "apt-get install $pkg failed"; }
  fi
  command -v "$bin" >/dev/null || fail "$pkg installed but $bin is not on PATH"
  log "installed $pkg in $((SECONDS - t0))s"
}

# install_prometheus: Debian's prometheus and promtool when missing, as
# root, with the package's own service kept from starting (the scripts run
# their own instances): policy-rc.d is the Debian way to say "do not start
# services" during an install; it is removed again only if created here.
install_prometheus() {
  if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
    local created_policy=""
    if [[ $(id -u) -eq 0 && ! -e /usr/sbin/policy-rc.d ]]; then
      printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
      chmod +x /usr/sbin/policy-rc.d
      created_policy=1
    fi
    # Without recommends: they would pull in exporters we do not use.
    apt_install prometheus prometheus --no-install-recommends
    [[ -n "$created_policy" ]] && rm -f /usr/sbin/policy-rc.d
    command -v promtool >/dev/null || fail "prometheus installed without promtool"
  fi
  log "$(prometheus --version 2>&1 | head -1)"
}

# gpuspans_bin [PATH]: the binary under test: PATH if given, else built
# with go build into the temporary directory.
gpuspans_bin() {
  if [[ -n "${1:-}" ]]; then
    [[ -x "$1" ]] || fail "$1 is not an executable"
    echo "$1"
    return
  fi
  command -v go >/dev/null || fail "no gpuspans binary given and no go to build one"
  (cd "$ROOT" && go build -o "$TMP/gpuspans" ./go/cmd/gpuspans) >&2 || fail "go build failed"
  echo "$TMP/gpuspans"
}

# start_demo BIN ARGS...: starts the demo on a free loopback port and sets
# DEMO_URL (http://127.0.0.1:PORT) and DEMO_LOG ($TMP/$DEMO_NAME.log: give
# each demo of a script its DEMO_NAME; default "demo").
start_demo() {
  local bin=$1
  shift
  DEMO_LOG="$TMP/${DEMO_NAME:-demo}.log"
  : >"$DEMO_LOG" # before the background job opens it, so the first grep finds it
  "$bin" demo --backend=sim --listen=127.0.0.1:0 --trace= "$@" >"$DEMO_LOG" 2>&1 &
  PIDS+=($!)
  wait_for 20 "the demo's live page URL" grep -q '^live page: http://' "$DEMO_LOG"
  DEMO_URL="$(sed -n 's|^live page: \(http://[^/]*\)/debug/gpuspans.*|\1|p' "$DEMO_LOG" | head -1)"
  [[ -n "$DEMO_URL" ]] || fail "no URL in the demo's output: $(cat "$DEMO_LOG")"
  head -1 "$DEMO_LOG" | grep -q 'using the simulated GPU' || fail "first line does not name the simulator: $(head -1 "$DEMO_LOG")"
  log "demo up at $DEMO_URL"
}

# free_port: a loopback TCP port nothing listens on now, below the kernel's
# ephemeral range where it can: a port from that range can be taken, between
# this check and the server's bind, by any outgoing connection (a scrape).
free_port() {
  local p lo=20000 hi=40000 eph
  read -r eph _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || eph=0
  if ((eph > 11000)); then lo=10000 hi=$((eph - 1)); fi
  for _ in $(seq 50); do
    p=$((lo + RANDOM % (hi - lo)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  fail "no free port found"
}
