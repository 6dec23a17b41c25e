// The Go tools that tools/bootstrap.sh builds, pinned with their whole module
// graph (go.sum): nothing the set-up builds resolves "newest". Built with the
// Go SDK that Bazel uses, so the host Go only needs to fetch it.
module github.com/gpuspans/gpuspans/tools/deps

go 1.26.8

tool github.com/bazelbuild/buildtools/buildifier

require (
	github.com/bazelbuild/buildtools v0.0.0-20260904073137-eaa4d125b423 // indirect
	github.com/golang/protobuf v1.5.0 // indirect
	github.com/google/safeopen v0.0.0-20260327150837-43626d6f4685 // indirect
	golang.org/x/sys v0.10.0 // indirect
	google.golang.org/protobuf v1.33.0 // indirect
)
