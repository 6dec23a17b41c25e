//go:build cgo

package main

import (
	"sync/atomic"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// tokenSlots is the size of a hub's token table: how many kernel spans may
// be open at once before the oldest open one is forgotten (and reclaimed by
// the hub as leaked). Real engines hold a few.
const tokenSlots = 4096

// reserved marks an entry being written or read; never a token.
const reserved = ^uint64(0)

// tokenHubShift places a hub's tag in its tokens' top bits: 2^48 tokens per
// hub (9 years at a million kernel spans a second).
const tokenHubShift = 48

// tokenTable turns the hub's KernelSpan values (which hold a Go pointer C
// must not keep) into integer tokens, without locks or allocation: token t
// lives in entry t % tokenSlots while that entry's state is t. Every token
// carries its hub's tag (handle mod 2^16) in its top 16 bits, so that a
// token of one hub, passed to another, is refused by name rather than
// ending the other hub's span: open hubs have distinct slots, hence
// distinct tags.
type tokenTable struct {
	tag     uint64 // handle mod 2^16, shifted to the top bits
	next    atomic.Uint64
	entries [tokenSlots]tokenEntry
}

// mine reports whether tok carries this table's hub tag.
func (t *tokenTable) mine(tok uint64) bool {
	return tok>>tokenHubShift == t.tag>>tokenHubShift
}

type tokenEntry struct {
	state atomic.Uint64 // 0 free, reserved, or the token held
	span  gpuspans.KernelSpan
}

// begin opens a kernel span on h (device < 0: its lowest installed device)
// and returns its token, or 0 when the hub opened nothing or the entry is
// in use by a racing call.
func (t *tokenTable) begin(h *gpuspans.Hub, device int, kernel uint64, stream backend.Stream) uint64 {
	tok := t.tag | t.next.Add(1)&(1<<tokenHubShift-1)
	e := &t.entries[tok%tokenSlots]
	old := e.state.Load()
	// An entry still holding a span 4096 tokens later holds a leaked one:
	// take it over; the hub reclaims that span, and its late end fails.
	if old == reserved || !e.state.CompareAndSwap(old, reserved) {
		return 0
	}
	var sp gpuspans.KernelSpan
	if device < 0 {
		sp = h.KernelBegin(kernel, stream)
	} else {
		sp = h.Device(device).KernelBegin(kernel, stream)
	}
	if sp == (gpuspans.KernelSpan{}) {
		e.span = gpuspans.KernelSpan{}
		e.state.Store(0)
		return 0
	}
	e.span = sp
	e.state.Store(tok)
	return tok
}

// end takes the span of tok out of the table; ok is false when tok is not
// open.
func (t *tokenTable) end(tok uint64) (sp gpuspans.KernelSpan, ok bool) {
	if tok == 0 || tok == reserved || !t.mine(tok) {
		return sp, false
	}
	e := &t.entries[tok%tokenSlots]
	if !e.state.CompareAndSwap(tok, reserved) {
		return sp, false
	}
	sp, e.span = e.span, gpuspans.KernelSpan{}
	e.state.Store(0)
	return sp, true
}
