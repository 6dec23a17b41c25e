//go:build cgo

package main

import (
	"strings"
	"testing"
	"unsafe"
)

// TestReadSizedLayouts holds readSized to hub.h's rule with a struct that
// has grown once: v1 (an int32 and a pointer, then an int32 and 4 bytes of
// tail padding: 24) and v2 (an int32 added in v1's padding, and an int64:
// 32).
func TestReadSizedLayouts(t *testing.T) {
	type v1 struct {
		size uint32
		a    int32
		p    *byte
		c    int32
	}
	type v2 struct {
		size  uint32
		a     int32
		p     *byte
		c     int32
		added int32 // where v1 had padding
		b     int64
	}
	if unsafe.Sizeof(v1{}) != 24 || unsafe.Sizeof(v2{}) != 32 {
		t.Fatalf("layouts of %d and %d bytes", unsafe.Sizeof(v1{}), unsafe.Sizeof(v2{}))
	}
	layouts := []layout{{24, 20}, {32, 32}}
	x := byte(1)

	// An older caller's struct, its padding and what follows it dirty:
	// read up to its fields, the rest the defaults.
	old := struct {
		v1
		junk [16]byte
	}{v1: v1{size: 24, a: 7, p: &x, c: 9}}
	*(*int32)(unsafe.Add(unsafe.Pointer(&old), 20)) = 0x7eadbeef // v1's tail padding: v2's added
	for i := range old.junk {
		old.junk[i] = 0xff
	}
	var got v2
	if err := readSized("s", unsafe.Pointer(&old), 24, unsafe.Pointer(&got), layouts); err != nil {
		t.Fatal(err)
	}
	if got.a != 7 || got.p != &x || got.c != 9 || got.added != 0 || got.b != 0 {
		t.Errorf("an older struct read as %+v: want a 7, p its pointer, c 9, the newer fields zero", got)
	}

	// This library's own size: everything.
	cur := v2{size: 32, a: 1, p: &x, c: 4, added: 2, b: 3}
	got = v2{}
	if err := readSized("s", unsafe.Pointer(&cur), cur.size, unsafe.Pointer(&got), layouts); err != nil || got != cur {
		t.Errorf("the current struct read as %+v, %v", got, err)
	}

	// Refused by name: 0, past this library's, and sizes of no layout (12
	// would copy half the pointer).
	for _, size := range []uint32{0, 6, 12, 16, 20, 28, 33, 1 << 31} {
		got = v2{}
		err := readSized("gs_hub_thing", unsafe.Pointer(&cur), size, unsafe.Pointer(&got), layouts)
		if err == nil || !strings.Contains(err.Error(), "gs_hub_thing.size is") {
			t.Errorf("size %d: %v, want a refusal naming gs_hub_thing.size", size, err)
		}
		if got != (v2{}) {
			t.Errorf("size %d: refused but wrote %+v", size, got)
		}
	}
}
