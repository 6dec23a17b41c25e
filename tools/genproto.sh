#!/usr/bin/env bash
# Regenerates the committed Go code for proto/ so plain `go build` works
# (Bazel builds these too: proto/gpuspans/v1/BUILD.bazel). CI runs it with --check and
# fails when the committed code is stale.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${GPUSPANS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuspans}"
# Same version as google.golang.org/protobuf in go.mod.
PGG_VERSION="$(cd "$ROOT" && go list -m -f '{{.Version}}' google.golang.org/protobuf)"
PGG="$CACHE/bin/protoc-gen-go-$PGG_VERSION"
if [[ ! -x "$PGG" ]]; then
  mkdir -p "$CACHE/bin/tmp"
  (cd "$ROOT" && GOBIN="$CACHE/bin/tmp" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PGG_VERSION")
  mv "$CACHE/bin/tmp/protoc-gen-go" "$PGG"
fi
command -v protoc >/dev/null || { echo "genproto: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }

out="$ROOT"
if [[ "${1:-}" == "--check" ]]; then
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi
cd "$ROOT"
for dir in $(find proto -name '*.proto' -printf '%h\n' | sort -u); do
  protoc --plugin=protoc-gen-go="$PGG" --go_out="$out" --go_opt=paths=source_relative "$dir"/*.proto
done
if [[ "${1:-}" == "--check" ]]; then
  stale=0
  while IFS= read -r f; do
    rel="${f#"$out"/}"
    if ! cmp -s "$f" "$ROOT/$rel"; then
      echo "genproto: $rel is stale; run tools/genproto.sh" >&2
      stale=1
    fi
  done < <(find "$out" -name '*.pb.go')
  exit "$stale"
fi
