// Package cudabridge hands go/cuda/cudatest and go/capi what they need of
// go/cuda without an exported name in go/cuda: the C pool behind a
// *cuda.Pool (the fake driver's Force reaches its events; go/capi's C span
// path records on it) and the core's error mapping. go/cuda fills it at
// init in a build with cgo; without cgo its functions stay nil, and
// neither user calls them then.
package cudabridge

import "unsafe"

// PoolPtr returns the gs_pool* behind pool, a *cuda.Pool, as an integer: 0
// for a nil or closed pool, or for anything else than a *cuda.Pool.
var PoolPtr func(pool any) uintptr

// ErrorOf turns a core gs_error (e points to one) into go/cuda's error for
// op: a *backend.DriverError whose Kind maps the core's status.
var ErrorOf func(op string, e unsafe.Pointer) error

// RecordError is the error a *cuda.Pool's record method named op returns
// for the core's status and CUresult cu (a record made by the core on
// behalf of a pool, as go/capi's span path makes them).
var RecordError func(op string, status, cu int32) error
