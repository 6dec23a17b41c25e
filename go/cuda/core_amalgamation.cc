//go:build cgo

// Compiles the C++ core and test kit into this cgo package, so a plain
// `go build` or `go test` works without Bazel. Bazel links //cuda:core and
// //cuda:testkit through cdeps instead: gazelle excludes this file, and
// -DGPUSPANS_NO_AMALGAMATION turns it off should a build list it anyway.
// One translation unit: names in the files' anonymous namespaces must stay
// distinct (a clash is a compile error, never a silent mix-up).
#ifndef GPUSPANS_NO_AMALGAMATION
#include "../../cuda/src/driver.cc"
#include "../../cuda/src/fake_driver.cc"
#include "../../cuda/src/pool.cc"
#include "../../cuda/src/testkit.cc"
#endif
