// Package bridge hands go/cuda/cudatest what it needs of go/cuda without an
// exported name in go/cuda: the C pool behind a *cuda.Pool (the fake
// driver's Force reaches its events) and the core's error mapping. Only
// packages under go/cuda can import it. go/cuda fills it at init in a build
// with cgo; without cgo its functions stay nil, and cudatest does not call
// them.
package bridge

import "unsafe"

// PoolPtr returns the gs_pool* behind pool, a *cuda.Pool, as an integer: 0
// for a nil or closed pool, or for anything else than a *cuda.Pool.
var PoolPtr func(pool any) uintptr

// ErrorOf turns a core gs_error (e points to one) into go/cuda's error for
// op: a *backend.DriverError whose Kind maps the core's status.
var ErrorOf func(op string, e unsafe.Pointer) error
