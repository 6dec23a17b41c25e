//go:build cgo && !gpuspans_testing

package main

// cross is where a call from C is counted in a library built for tests
// (crossings_testing.go); the shipped library counts nothing and exports
// no test hook.
func cross() {}
