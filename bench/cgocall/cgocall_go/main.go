// Command cgocall is the Go half of the C-to-Go call benchmark: a c-archive
// exporting one trivial function, so that cgocall_bench.c measures only the
// crossing from a C-created thread into Go (what a C++ or Python engine pays
// for each call into the control plane).
package main

import "C"

//export gsBenchAdd
func gsBenchAdd(x C.longlong) C.longlong { return x + 1 }

func main() {}
