//go:build cgo

package main

/*
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"

// Go cannot call a C function pointer itself. (Definitions are allowed in
// this preamble only because this file has no //export.)
static void gs_hub_call_log(gs_hub_log_fn fn, gs_hub hub, int32_t level, const char* line, size_t len,
                            void* user) {
  fn(hub, level, line, len, user);
}
*/
import "C"

import (
	"fmt"
	"log"
	"sync"
	"time"
	"unsafe"
)

// Log lines of a hub: to stderr (unless quiet) while no callback is set;
// else into a bounded queue that a goroutine of the hub's delivers to the
// callback, so that whoever logs (a harvest, under the hub's lock; an
// HTTP handler) never waits for the callback, and a callback that is slow
// or stuck costs dropped lines, counted, never memory or a blocked engine.
const (
	logQueueCap   = 256         // lines waiting for the callback
	maxLogLen     = 2048        // bytes of a line, as maxErrLen
	closeDelivery = time.Second // how long close delivers queued lines
)

type logLine struct {
	level int32
	text  string
}

type logSink struct {
	handle uint64
	quiet  bool

	// deliverMu is held while the callback runs, so that setting another
	// callback (or closing) waits for it: the caller may then free user.
	deliverMu sync.Mutex

	mu         sync.Mutex // guards the rest
	fn         C.gs_hub_log_fn
	user       unsafe.Pointer
	queue      [logQueueCap]logLine
	head, n    int
	dropped    uint64 // lines dropped in all
	unreported uint64 // dropped since the last delivery: reported before the next line
	wake       chan struct{}
	stop, done chan struct{} // nil until the delivering goroutine starts
	closeBy    time.Time     // set by close: delivery stops then
}

func newLogSink(handle uint64, quiet bool) *logSink {
	return &logSink{handle: handle, quiet: quiet, wake: make(chan struct{}, 1)}
}

// logf returns a Logf that logs at level.
func (s *logSink) logf(level int32) func(format string, args ...interface{}) {
	return func(format string, args ...interface{}) {
		s.log(level, fmt.Sprintf(format, args...))
	}
}

// log queues msg for the callback, or writes it to stderr when none is
// set. It never blocks on the callback.
func (s *logSink) log(level int32, msg string) {
	s.mu.Lock()
	if s.fn == nil {
		s.mu.Unlock()
		if !s.quiet {
			log.Print(msg)
		}
		return
	}
	if s.n == logQueueCap {
		s.dropped++
		s.unreported++
		s.mu.Unlock()
		return
	}
	s.queue[(s.head+s.n)%logQueueCap] = logLine{level, truncate(msg, maxLogLen)}
	s.n++
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// setCallback sets fn (nil: back to stderr) after any running call of the
// previous one returns. Lines queued stay for the next callback.
func (s *logSink) setCallback(fn C.gs_hub_log_fn, user unsafe.Pointer) {
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	s.mu.Lock()
	s.fn, s.user = fn, user
	if fn != nil && s.stop == nil {
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go s.run(s.stop, s.done)
	}
	s.mu.Unlock()
	if fn != nil {
		select {
		case s.wake <- struct{}{}: // lines queued before
		default:
		}
	}
}

// droppedLines returns how many lines were dropped in all.
func (s *logSink) droppedLines() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// close delivers what is queued for up to closeDelivery and stops the
// delivering goroutine, if one runs: no call of the callback starts after
// it returns. A call that is still running then (a callback that blocks)
// is left to return on its own rather than hold close: the lines after it
// are dropped and counted.
func (s *logSink) close() {
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.closeBy = time.Now().Add(closeDelivery)
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		select {
		case <-done:
		case <-time.After(closeDelivery + closeDelivery/10):
			s.mu.Lock()
			s.fn, s.user = nil, nil // the stuck call's loop ends when it returns
			s.dropped += uint64(s.n)
			s.queue, s.head, s.n = [logQueueCap]logLine{}, 0, 0
			s.mu.Unlock()
			return
		}
	}
	s.deliverMu.Lock()
	s.mu.Lock()
	s.fn, s.user = nil, nil
	s.mu.Unlock()
	s.deliverMu.Unlock()
}

func (s *logSink) run(stop, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-s.wake:
			s.deliver()
		case <-stop:
			s.deliver()
			return
		}
	}
}

// deliver calls the callback with every queued line, oldest first, each
// after a line saying how many were dropped before it, if any. Past the
// close deadline it drops what is left, counted.
func (s *logSink) deliver() {
	for {
		s.deliverMu.Lock()
		s.mu.Lock()
		fn, user := s.fn, s.user
		if !s.closeBy.IsZero() && s.n > 0 && time.Now().After(s.closeBy) {
			s.dropped += uint64(s.n)
			s.queue, s.head, s.n = [logQueueCap]logLine{}, 0, 0
		}
		if fn == nil || s.n == 0 {
			s.mu.Unlock()
			s.deliverMu.Unlock()
			return
		}
		line := s.queue[s.head]
		s.queue[s.head] = logLine{}
		s.head = (s.head + 1) % logQueueCap
		s.n--
		lost := s.unreported
		s.unreported = 0
		s.mu.Unlock()
		if lost > 0 {
			s.call(fn, user, C.GS_HUB_LOG_WARNING, fmt.Sprintf("gpuspans: %d log lines dropped: the log callback did not keep up", lost))
		}
		s.call(fn, user, line.level, line.text)
		s.deliverMu.Unlock()
	}
}

// call passes text to fn as a NUL-terminated copy in Go memory, valid for
// the call (it holds no Go pointers, so cgo allows it).
func (s *logSink) call(fn C.gs_hub_log_fn, user unsafe.Pointer, level int32, text string) {
	b := make([]byte, len(text)+1)
	copy(b, text)
	C.gs_hub_call_log(fn, C.gs_hub(s.handle), C.int32_t(level), (*C.char)(unsafe.Pointer(&b[0])), C.size_t(len(text)), user)
}
