package demo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gpuspans/gpuspans/go/export/spanfile"
	"github.com/gpuspans/gpuspans/go/export/trace"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/outfile"
)

// outputs are the trace and span files of a run.
type outputs struct {
	tracePath string
	traceTmp  *outfile.File // written at finish, renamed to tracePath
	ring      spanRing
	spansPath string
	spansFile *outfile.File // written as spans land, renamed to spansPath at finish
	spans     *spanfile.Writer
	fileSpans uint64
	spansErr  error
	made      []string // the empty files made for patterns (newFile), removed by an abort before finish
	finished  bool
	mu        sync.Mutex // guards ring, spans, fileSpans and spansErr: the collector and finish both write
}

// openOutputs creates the output files up front, so that a bad path fails
// before the demo runs rather than at its end. Each goes to a temporary
// file next to its path, renamed there at finish: until then nothing at the
// path is touched, and only a regular file is ever replaced (see outfile).
// Both paths are checked, and refused if they are the same file, before
// either is created. A path with a "*" in its last element is first made
// as a new, empty file (see Config.TracePath): what is renamed onto it at
// finish replaces only that.
func openOutputs(cfg *Config) (_ *outputs, err error) {
	o := &outputs{}
	defer func() {
		if err != nil {
			o.abort()
		}
	}()
	if cfg.TracePath != "" && cfg.SpansPath != "" && outfile.Same(cfg.TracePath, cfg.SpansPath) {
		return nil, fmt.Errorf("--trace %s and --spans %s are the same file", cfg.TracePath, cfg.SpansPath)
	}
	for _, c := range []struct{ flag, path string }{{"--trace", cfg.TracePath}, {"--spans", cfg.SpansPath}} {
		if c.path != "" && !isPattern(c.path) {
			if err := outfile.Check(c.flag, c.path); err != nil {
				return nil, err
			}
		}
	}
	if o.tracePath, err = o.newFile("--trace", cfg.TracePath); err != nil {
		return nil, err
	}
	if o.spansPath, err = o.newFile("--spans", cfg.SpansPath); err != nil {
		return nil, err
	}
	if o.tracePath != "" {
		f, err := outfile.Create("--trace", o.tracePath)
		if err != nil {
			return nil, err
		}
		o.traceTmp = f
		o.ring.buf = make([]gpuspans.Span, 0, minInt(cfg.TraceSpans, 4096))
		o.ring.max = cfg.TraceSpans
	}
	if o.spansPath != "" {
		f, err := outfile.Create("--spans", o.spansPath)
		if err != nil {
			return nil, err
		}
		o.spansFile = f
		o.spans = spanfile.NewWriter(f, spanfile.Options{})
	}
	return o, nil
}

// isPattern reports whether path names a new file each run: a "*" in its
// last element.
func isPattern(path string) bool { return strings.Contains(filepath.Base(path), "*") }

// newFile returns path, or for a pattern the new file it creates (and
// remembers, for abort to remove).
func (o *outputs) newFile(flag, path string) (string, error) {
	if path == "" || !isPattern(path) {
		return path, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return "", fmt.Errorf("%s %s: cannot create a new file there: %w", flag, path, err)
	}
	_ = f.Close()
	o.made = append(o.made, f.Name())
	return f.Name(), nil
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func (o *outputs) describe() string {
	var parts []string
	if o.tracePath != "" {
		parts = append(parts, "trace on exit: "+o.tracePath)
	}
	if o.spansPath != "" {
		parts = append(parts, "span file: "+o.spansPath)
	}
	if len(parts) == 0 {
		return "no trace or span file"
	}
	return strings.Join(parts, ", ")
}

// wantSpans reports whether any output takes spans. Fixed after openOutputs.
func (o *outputs) wantSpans() bool { return o.traceTmp != nil || o.spans != nil }

// add takes the spans the collector read.
func (o *outputs) add(spans []gpuspans.Span) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.traceTmp != nil {
		o.ring.add(spans)
	}
	if o.spans != nil && o.spansErr == nil {
		if err := o.spans.WriteSpans("gpuspans demo", spans); err != nil {
			o.spansErr = err
		} else {
			o.fileSpans += uint64(len(spans))
		}
	}
}

// addRequests takes the finished requests' records the collector read:
// the span file keeps them.
func (o *outputs) addRequests(recs []gpuspans.RequestRecord) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.spans != nil && o.spansErr == nil {
		if err := o.spans.WriteRequests("gpuspans demo", recs); err != nil {
			o.spansErr = err
		}
	}
}

type written struct{ trace, unplaced, file uint64 }

// finish writes the trace and closes both files; the span file ends with
// the hub's final snapshot.
func (o *outputs) finish(s *gpuspans.Snapshot) (written, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished = true
	var w written
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if o.spans != nil {
		if o.spansErr == nil {
			keep(o.spans.WriteSnapshot(s))
		}
		keep(o.spansErr)
		keep(o.spansFile.Commit())
		o.spans, o.spansFile = nil, nil
		w.file = o.fileSpans
	}
	if o.traceTmp != nil {
		f := o.traceTmp
		o.traceTmp = nil
		tw := trace.NewWriter(f, trace.Options{})
		err := tw.WriteSpans(o.ring.ordered())
		if err == nil {
			err = tw.Close()
		}
		if err != nil {
			f.Abort()
			o.removeMade(o.tracePath)
			keep(fmt.Errorf("writing the trace %s: %w", o.tracePath, err))
		} else if err = f.Commit(); err != nil {
			keep(fmt.Errorf("writing the trace: %w", err))
		} else {
			w.trace, w.unplaced = tw.Counts().Written, tw.Counts().Unplaced
		}
	}
	return w, first
}

// abort removes the temporary trace and span files, leaving their paths as
// they were, for a run that fails before finish. After finish it does nothing.
func (o *outputs) abort() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.traceTmp != nil {
		o.traceTmp.Abort()
		o.traceTmp = nil
	}
	if o.spansFile != nil {
		o.spansFile.Abort()
		o.spansFile, o.spans = nil, nil
	}
	if !o.finished {
		for _, p := range o.made {
			_ = os.Remove(p)
		}
		o.made = nil
	}
}

// removeMade removes path if newFile made it, as an empty file nothing was
// written to.
func (o *outputs) removeMade(path string) {
	for _, p := range o.made {
		if p == path {
			_ = os.Remove(p)
		}
	}
}

// spanRing keeps the last max spans for the trace, so a demo left running
// for hours still writes a trace a viewer can open.
type spanRing struct {
	buf  []gpuspans.Span
	max  int
	next int // where the next span goes once buf is full
}

func (r *spanRing) add(spans []gpuspans.Span) {
	for _, s := range spans {
		if len(r.buf) < r.max {
			r.buf = append(r.buf, s)
			continue
		}
		r.buf[r.next] = s
		r.next = (r.next + 1) % r.max
	}
}

// ordered returns the spans oldest first.
func (r *spanRing) ordered() []gpuspans.Span {
	if len(r.buf) < r.max || r.next == 0 {
		return r.buf
	}
	return append(append([]gpuspans.Span(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}
