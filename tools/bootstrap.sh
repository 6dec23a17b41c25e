#!/usr/bin/env bash
# Prepares this machine to build gpuspans with Bazel offline.
#
# Reachable: the Go module proxy (whatever `go env GOPROXY` says) and
# Debian's packages; nothing from GitHub or the Bazel mirrors. So every
# repository that WORKSPACE would fetch with http_archive is materialised in a
# local cache and named in a git-ignored .bazelrc.user as
# --override_repository=NAME=DIR; the committed WORKSPACE stays an ordinary
# online one. Idempotent: a warm run only checks and rewrites .bazelrc.user.
#
# Needs a host Go >= 1.21 on PATH, only to fetch (GOTOOLCHAIN): the Go SDK
# and the rule sets are pinned here (buildifier, which only contributors and
# CI need, in tools/deps/go.mod; tools/buildifier.sh builds it on first use).
# As root it installs the Debian packages it needs; otherwise it names the
# missing ones and stops.
#
# --go: only what the run command's plain `go build` needs (g++ and a host
# Go that can fetch the pinned SDK); prints that SDK's GOTOOLCHAIN name.
#
# Silent when there is nothing to do, so a warm command's output is its own.
#
# Environment:
#   GPUSPANS_CACHE   where generated repositories go (default ~/.cache/gpuspans)
set -euo pipefail
GO_ONLY=0
case "${1:-}" in
  --go) GO_ONLY=1 ;;
  "") ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
    exit 0
    ;;
  *) echo "bootstrap: unknown argument '$1' (want --go, or none)" >&2; exit 2 ;;
esac

RULES_GO_VERSION=v0.34.0  # last rules_go for Bazel 4.2.x (v0.35+ needs Bazel 5.1)
GAZELLE_VERSION=v0.27.0   # last gazelle for rules_go 0.34 (0.28+ needs rules_go 0.35)
GO_SDK_VERSION=1.26.8     # driven by rules_go 0.34 through our patch (third_party/rules_go)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RULES_GO_PATCH="$ROOT/third_party/rules_go/rules_go-$RULES_GO_VERSION.patch"
GAZELLE_PATCH="$ROOT/third_party/gazelle/gazelle-$GAZELLE_VERSION.patch"
# Anything that changes what is built into the cache changes the stamp.
STAMP_VERSION="rules_go=$RULES_GO_VERSION gazelle=$GAZELLE_VERSION go=$GO_SDK_VERSION \
patch=$(cat "$RULES_GO_PATCH" "$GAZELLE_PATCH" | sha256sum | cut -c1-16) v7"
CACHE="${GPUSPANS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuspans}"
log() { echo "bootstrap: $*" >&2; }
die() { echo "bootstrap: error: $*" >&2; exit 1; }
# quiet WHAT CMD...: runs CMD, showing its output ("go: downloading ...",
# dozens of lines) only if it fails.
quiet() {
  local what="$1" out
  shift
  if ! out="$("$@" 2>&1)"; then
    printf '%s\n' "$out" >&2
    die "$what"
  fi
}

# --- Debian packages ---------------------------------------------------------
APT_PKGS=(bazel-bootstrap bazel-skylib bazel-platforms bazel-rules-proto bazel-rules-java
  protobuf-compiler libprotobuf-dev g++ git patch)
((GO_ONLY)) && APT_PKGS=(g++) # cgo compiles the C++ core through the amalgamation
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    log "installing Debian packages: ${missing[*]} (about a minute)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    die "missing Debian packages (run as root, or: sudo apt-get install ${missing[*]})"
  fi
fi

command -v go >/dev/null || die "no host Go on PATH (need Go >= 1.21 to fetch the Go $GO_SDK_VERSION SDK)"
hostgo="$(GOTOOLCHAIN=local go env GOVERSION)"
case "$hostgo" in
  go1.2[1-9]* | go1.[3-9][0-9]* | go[2-9]*) ;;
  *) die "host Go is $hostgo; need >= go1.21 (GOTOOLCHAIN support)" ;;
esac
if ((GO_ONLY)); then
  echo "go$GO_SDK_VERSION"
  exit 0
fi

mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
# Outside any module: the workspace's go.mod may need a newer Go than the host.
cd "$CACHE"
STAMP="$CACHE/.stamp"

# Module downloads must not depend on the workspace's go.mod.
export GOFLAGS=-mod=mod
export GOTOOLCHAIN=local

moddir() { # moddir MODULE@VERSION: prints its directory in the module cache
  local json dir
  json="$(cd "$CACHE" && go mod download -json "$1")" || die "cannot download $1 from the Go module proxy"
  dir="$(printf '%s' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -n "$dir" ]] || die "cannot download $1: $json"
  printf '%s\n' "$dir"
}

RULES_GO_DIR="$CACHE/rules_go-$RULES_GO_VERSION-patched"
GAZELLE_DIR="$CACHE/bazel_gazelle-$GAZELLE_VERSION"
GO_SDK_DIR="$CACHE/go_sdk-$GO_SDK_VERSION"
PB_DIR="$CACHE/com_google_protobuf"
RULES_CC_DIR="$CACHE/rules_cc"
COV_DIR="$CACHE/remote_coverage_tools"

# The SDK directory links into a GOROOT that is not ours (the host's, when it
# is the same version): repopulate if that GOROOT changed under us.
sdk_ok() { [[ "$("$GO_SDK_DIR/bin/go" env GOVERSION 2>/dev/null)" == "go$GO_SDK_VERSION" ]]; }
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$STAMP_VERSION" ]] || ! sdk_ok; then
  log "first run: fetching rules_go, gazelle and the Go $GO_SDK_VERSION SDK into $CACHE (about 10 s)"
  rm -f "$STAMP"

  # rules_go: a writable copy of the module, with our patch applied
  # (repositories.bzl applies the same patch through http_archive online).
  rm -rf "$RULES_GO_DIR"
  cp -R "$(moddir "github.com/bazelbuild/rules_go@$RULES_GO_VERSION")" "$RULES_GO_DIR"
  chmod -R u+w "$RULES_GO_DIR"
  patch -s -p1 -d "$RULES_GO_DIR" <"$RULES_GO_PATCH" || die "cannot apply $RULES_GO_PATCH"
  # Module zips drop executable bits; rules_go's scripts need them (bazel
  # coverage symlinks lcov_merger.sh and refuses a non-executable one).
  find "$RULES_GO_DIR" -name '*.sh' -exec chmod +x {} +

  # gazelle: module zips drop vendor/, but go_repository_tools builds gazelle
  # in GOPATH mode from vendor/; re-create it through the proxy. Debian's
  # skylib 1.0.3 cannot load gazelle's internal test suite: drop those lines.
  rm -rf "$GAZELLE_DIR"
  cp -R "$(moddir "github.com/bazelbuild/bazel-gazelle@$GAZELLE_VERSION")" "$GAZELLE_DIR"
  chmod -R u+w "$GAZELLE_DIR"
  quiet "cannot vendor gazelle's modules" bash -c 'cd "$1" && go mod vendor' _ "$GAZELLE_DIR"
  sed -i -e '/^load(":gazelle_binary_test.bzl"/d' -e '/^gazelle_binary_test_suite()/d' \
    "$GAZELLE_DIR/internal/BUILD.bazel"
  patch -s -p1 -d "$GAZELLE_DIR" <"$GAZELLE_PATCH" || die "cannot apply $GAZELLE_PATCH"
  # repositories.bzl's patch_cmds, the same command (third_party/gazelle/README.md).
  (cd "$GAZELLE_DIR" && sed -i -E 's/label\.New\(("[^"]*"), ("[^"]*"), ("[^"]*")\)/label.Label{Repo: \1, Pkg: \2, Name: \3}/g' language/proto/known_*imports.go)

  # Go SDK: the golang.org/toolchain module; running it once makes the go
  # command restore the executable bits the module cache strips.
  GOROOT_SDK="$(cd "$CACHE" && GOTOOLCHAIN="go$GO_SDK_VERSION" go env GOROOT)"
  [[ -x "$GOROOT_SDK/bin/go" ]] || die "cannot fetch the Go $GO_SDK_VERSION SDK ($GOROOT_SDK/bin/go is not executable)"
  # The go command runs the extracted toolchain; its zip (70 MB) is kept
  # only to extract it again, so it goes.
  rm -f "$(go env GOMODCACHE)/cache/download/golang.org/toolchain/@v/v0.0.1-go$GO_SDK_VERSION".*.zip
  rm -rf "$GO_SDK_DIR"
  mkdir -p "$GO_SDK_DIR"
  for entry in "$GOROOT_SDK"/*; do ln -s "$entry" "$GO_SDK_DIR/$(basename "$entry")"; done
  touch "$GO_SDK_DIR/ROOT" "$GO_SDK_DIR/WORKSPACE"
  # The BUILD file rules_go's go_download_sdk would generate.
  sed -e 's/{goos}/linux/g' -e 's/{goarch}/amd64/g' -e 's/{exe}//g' \
    -e 's/{rules_go_repo_name}/io_bazel_rules_go/g' \
    "$RULES_GO_DIR/go/private/BUILD.sdk.bazel" >"$GO_SDK_DIR/BUILD.bazel"

  # rules_cc: Debian's 0.0.4 needs Bazel >= 5; Bazel 4's rules_cc was a thin
  # re-export of the native rules, so generate that.
  rm -rf "$RULES_CC_DIR"
  mkdir -p "$RULES_CC_DIR/cc"
  echo 'workspace(name = "rules_cc")' >"$RULES_CC_DIR/WORKSPACE"
  : >"$RULES_CC_DIR/BUILD.bazel"
  echo 'exports_files(["defs.bzl"])' >"$RULES_CC_DIR/cc/BUILD.bazel"
  {
    echo '"""Generated by tools/bootstrap.sh: the native C++ rules (Bazel 4)."""'
    for r in cc_binary cc_import cc_library cc_proto_library cc_shared_library cc_test cc_toolchain cc_toolchain_suite; do
      printf '\ndef %s(**attrs):\n    native.%s(**attrs)\n' "$r" "$r"
    done
  } >"$RULES_CC_DIR/cc/defs.bzl"

  # remote_coverage_tools: every test depends on it through Bazel's own
  # WORKSPACE suffix; Debian does not package it. Stub it: `bazel test`
  # works, `bazel coverage` says it is unavailable (use go test -cover).
  rm -rf "$COV_DIR"
  mkdir -p "$COV_DIR"
  echo 'workspace(name = "remote_coverage_tools")' >"$COV_DIR/WORKSPACE"
  printf '#!/bin/sh\necho "gpuspans: bazel coverage is not available offline (Debian packages no remote_coverage_tools); use: go test -cover ./..." >&2\nexit 1\n' >"$COV_DIR/unavailable.sh"
  chmod +x "$COV_DIR/unavailable.sh"
  cat >"$COV_DIR/BUILD.bazel" <<'EOF'
package(default_visibility = ["//visibility:public"])

sh_binary(name = "coverage_report_generator", srcs = ["unavailable.sh"])

sh_binary(name = "lcov_merger", srcs = ["unavailable.sh"])
EOF

  sdk_ok || die "the Go SDK in $GO_SDK_DIR is not go$GO_SDK_VERSION"

  echo "$STAMP_VERSION" >"$STAMP"
fi

# com_google_protobuf: Debian's protoc plus its well-known .proto files,
# regenerated every run (cheap) so a protoc upgrade is picked up.
PROTOC="$(command -v protoc)" || die "protoc not found (apt-get install protobuf-compiler)"
WKT=/usr/include/google/protobuf
[[ -f "$WKT/timestamp.proto" ]] || die "$WKT/*.proto missing (apt-get install libprotobuf-dev)"
rm -rf "$PB_DIR"
mkdir -p "$PB_DIR/bin" "$PB_DIR/src/google/protobuf/compiler"
ln -s "$PROTOC" "$PB_DIR/bin/protoc"
for f in any api descriptor duration empty field_mask source_context struct timestamp type wrappers; do
  ln -s "$WKT/$f.proto" "$PB_DIR/src/google/protobuf/$f.proto"
done
ln -s "$WKT/compiler/plugin.proto" "$PB_DIR/src/google/protobuf/compiler/plugin.proto"
echo 'workspace(name = "com_google_protobuf")' >"$PB_DIR/WORKSPACE"
printf 'def protobuf_deps():\n    pass\n' >"$PB_DIR/protobuf_deps.bzl"
cat >"$PB_DIR/BUILD.bazel" <<EOF
# Generated by tools/bootstrap.sh: host protoc ($("$PROTOC" --version)).
package(default_visibility = ["//visibility:public"])

sh_binary(
    name = "protoc",
    srcs = ["bin/protoc"],
)

WKT = {
    "any": [],
    "api": ["source_context", "type"],
    "descriptor": [],
    "duration": [],
    "empty": [],
    "field_mask": [],
    "source_context": [],
    "struct": [],
    "timestamp": [],
    "type": ["any", "source_context"],
    "wrappers": [],
}

[proto_library(
    name = name + "_proto",
    srcs = ["src/google/protobuf/%s.proto" % name],
    strip_import_prefix = "src",
    deps = [d + "_proto" for d in deps],
) for name, deps in WKT.items()]

proto_library(
    name = "compiler_plugin_proto",
    srcs = ["src/google/protobuf/compiler/plugin.proto"],
    strip_import_prefix = "src",
    deps = [":descriptor_proto"],
)

filegroup(
    name = "well_known_protos",
    srcs = glob(["src/google/protobuf/**/*.proto"]),
)
EOF

# Debian-packaged Starlark rule sets.
SKYLIB_DIR=/usr/share/bazel/tools/skylib
PLATFORMS_DIR=/usr/share/bazel/tools/platforms
RULES_PROTO_DIR=/usr/share/bazel/rules/proto
RULES_JAVA_DIR=/usr/share/bazel/rules/java # rules_proto_dependencies() declares it
for d in "$SKYLIB_DIR" "$PLATFORMS_DIR" "$RULES_PROTO_DIR" "$RULES_JAVA_DIR"; do
  [[ -d "$d" ]] || die "missing $d (apt-get install bazel-skylib bazel-platforms bazel-rules-proto bazel-rules-java)"
done

# The overrides, for this workspace and for the example consumer workspace.
# A workspace whose outputs were made with other tools (its rc names another
# stamp) is expunged first: Bazel does not notice that an overridden
# repository's contents changed (a new rules_go or gazelle patch), and would
# keep the repositories fetched with the old ones.
write_rc() {
  local rc="$1" ws
  ws="$(dirname "$rc")"
  # Rewritten only when it changes: an unchanged file keeps Bazel's server
  # and its analysis cache.
  if [[ -e "$ws/bazel-out" ]] && ! grep -qxF "# stamp: $STAMP_VERSION" "$rc" 2>/dev/null; then
    log "tools changed since $ws was last built: bazel clean --expunge there"
    (cd "$ws" && bazel clean --expunge >/dev/null 2>&1) || log "could not expunge $ws; run 'bazel clean --expunge' there"
  fi
  {
    echo "# Written by tools/bootstrap.sh. Machine-specific: do not commit."
    echo "# stamp: $STAMP_VERSION"
    for cmd in build query fetch; do
      echo "$cmd --override_repository=io_bazel_rules_go=$RULES_GO_DIR"
      echo "$cmd --override_repository=bazel_gazelle=$GAZELLE_DIR"
      echo "$cmd --override_repository=go_sdk=$GO_SDK_DIR"
      echo "$cmd --override_repository=com_google_protobuf=$PB_DIR"
      echo "$cmd --override_repository=bazel_skylib=$SKYLIB_DIR"
      echo "$cmd --override_repository=platforms=$PLATFORMS_DIR"
      echo "$cmd --override_repository=rules_proto=$RULES_PROTO_DIR"
      echo "$cmd --override_repository=rules_cc=$RULES_CC_DIR"
      echo "$cmd --override_repository=rules_java=$RULES_JAVA_DIR"
      echo "$cmd --override_repository=remote_coverage_tools=$COV_DIR"
      echo "$cmd --repo_env=GOPROXY=$(go env GOPROXY)"
      echo "$cmd --repo_env=GOSUMDB=$(go env GOSUMDB)"
      # go_repository takes modules from the go command's own module cache
      # (go env GOMODCACHE), which the run command's go build fills too,
      # rather than downloading them again into one of its own (400 MB).
      echo "$cmd --repo_env=GO_REPOSITORY_USE_HOST_CACHE=1"
      # gazelle's repository tools (gazelle, fetch_repo) are built once per
      # output base, in a build cache of their own that tools/test.sh
      # empties afterwards (190 MB), not in the go command's.
      echo "$cmd --repo_env=GOCACHE=$CACHE/repository-go-build"
    done
    # Coverage needs tools Debian does not package, and rules_go v0.34 cannot
    # instrument Go 1.20+ tests: every test under `bazel coverage` runs the
    # stub, which says so and names go test -cover.
    echo "coverage --run_under=$COV_DIR/unavailable.sh"
  } >"$rc.tmp"
  if cmp -s "$rc.tmp" "$rc"; then
    rm -f "$rc.tmp"
  else
    mv "$rc.tmp" "$rc"
    log "ready ($CACHE); overrides in ${rc#"$ROOT"/}"
  fi
}
write_rc "$ROOT/.bazelrc.user"
write_rc "$ROOT/examples/.bazelrc.user"
