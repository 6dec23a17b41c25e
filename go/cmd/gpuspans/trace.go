package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuspans/gpuspans/go/cmd/gpuspans/internal/summary"
	"github.com/gpuspans/gpuspans/go/export/trace"
	"github.com/gpuspans/gpuspans/go/internal/outfile"
)

const traceDescription = `Converts a span file (written by "gpuspans demo --spans" or any program
using go/export/spanfile) to a timeline trace in Chrome Trace Event JSON, which
https://ui.perfetto.dev and chrome://tracing open: one process per GPU, one
track per lane and per kernel stream. FILE "-" reads standard input.

"gpuspans trace summary FILE" (or --summary) prints the per-lane and
per-kernel latency table instead, the same table the demo prints on exit.
(For a span file named "summary", write ./summary.)
`

func traceCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("trace", "gpuspans trace [-o OUT] FILE | gpuspans trace summary FILE", traceDescription)
	out := fs.String("o", "", `output trace file; "-" for standard output (default: FILE without its extension, plus .trace.json)`)
	sum := fs.Bool("summary", false, "print the latency table instead of writing a trace")
	pos, code, ok := parseFlags(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 && pos[0] == "summary" {
		*sum = true
		pos = pos[1:]
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "trace: want one span file, got %d arguments (see %s trace --help)\n", len(pos), cmdName)
		return 2
	}
	if !*sum {
		if *out == "" {
			*out = defaultTraceName(pos[0])
		}
		// Refused before the input is opened or anything created: the trace
		// is written to a temporary file and renamed onto -o only at the
		// end, but -o naming the input is a mistake worth saying.
		if *out != "-" {
			if sameAsInput(pos[0], *out, os.Stdin) {
				fmt.Fprintf(stderr, "gpuspans trace: -o %s is the input file\n", *out)
				return 2
			}
			if err := outfile.Check("-o", *out); err != nil {
				fmt.Fprintf(stderr, "gpuspans trace: %v\n", err)
				return 2
			}
		}
	}
	in, closeIn, err := openInput(pos[0], os.Stdin)
	if err != nil {
		fmt.Fprintf(stderr, "gpuspans trace: %v\n", err)
		return 1
	}
	defer closeIn()
	// Keep the first bytes: a span file that fails to read may be a trace
	// (JSON, what the demo writes by default), which the span reader's
	// "cannot parse invalid wire-format data" would not say.
	br := bufio.NewReader(in)
	head, _ := br.Peek(64)
	in = br
	if *sum {
		return hintJSON(traceSummary(in, pos[0], stdout, stderr), head, pos[0], stderr)
	}
	return hintJSON(traceConvert(in, pos[0], *out, stdout, stderr), head, pos[0], stderr)
}

// hintJSON passes code on, after a failure saying that the input was JSON,
// when it was.
func hintJSON(code int, head []byte, name string, stderr io.Writer) int {
	if code != 0 && looksLikeJSON(head) {
		fmt.Fprintf(stderr, "gpuspans trace: %s is JSON: a timeline trace (open it in https://ui.perfetto.dev), not a span file;\n"+
			"  span files come from \"%s demo --spans FILE\" or go/export/spanfile\n", name, cmdName)
	}
	return code
}

// sameAsInput reports whether out is the input file: name, or standard
// input when name is "-".
func sameAsInput(name, out string, stdin *os.File) bool {
	if name != "-" {
		return outfile.Same(name, out)
	}
	si, err := stdin.Stat()
	if err != nil {
		return false
	}
	so, err := os.Stat(out)
	return err == nil && os.SameFile(si, so)
}

// looksLikeJSON reports whether head, after white space, opens a JSON
// object or array. (A span file opens with its header record's length, a
// byte below 64.)
func looksLikeJSON(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

func openInput(name string, stdin io.Reader) (io.Reader, func(), error) {
	if name == "-" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { _ = f.Close() }, nil
}

func traceSummary(in io.Reader, name string, stdout, stderr io.Writer) int {
	rows, st, err := summary.ReadSpanFile(in)
	if err != nil && st.Spans == 0 && st.Snapshots == 0 && st.Unknown == 0 {
		// Nothing read: a table of nothing would only bury the error.
		fmt.Fprintf(stderr, "gpuspans trace summary: %s: %v (no record could be read: is it a span file?)\n", name, err)
		return 1
	}
	if st.FromSnapshot {
		fmt.Fprintf(stdout, "%s: no spans; the table is the file's last snapshot (of %d)\n", name, st.Snapshots)
	} else {
		fmt.Fprintf(stdout, "%s: %d spans\n", name, st.Spans)
	}
	if werr := summary.Write(stdout, rows); werr != nil && err == nil {
		err = werr
	}
	if st.Unknown > 0 {
		fmt.Fprintf(stdout, "%d spans of a kind this version does not know were skipped\n", st.Unknown)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpuspans trace summary: %s: %v (the table covers what was read before it)\n", name, err)
		return 1
	}
	return 0
}

// defaultTraceName is where "gpuspans trace FILE" writes: next to FILE, with
// .trace.json for its extension.
func defaultTraceName(in string) string {
	if in == "-" {
		return "-"
	}
	return strings.TrimSuffix(in, filepath.Ext(in)) + ".trace.json"
}

// traceConvert writes the trace of in to out ("-": stdout). A file goes to
// a temporary file renamed onto out at the end, so out is untouched by a
// conversion that fails before any span: on a bad record after some, the
// trace still holds valid JSON with the spans before it, which is worth
// keeping, and it is kept, with the error.
func traceConvert(in io.Reader, name, out string, stdout, stderr io.Writer) int {
	var dst io.Writer = stdout
	var f *outfile.File
	if out != "-" {
		var err error
		if f, err = outfile.Create("-o", out); err != nil {
			fmt.Fprintf(stderr, "gpuspans trace: %v\n", err)
			return 1
		}
		defer f.Abort()
		dst = f
	}
	counts, err := trace.FromSpanFile(dst, in, trace.Options{})
	if f != nil {
		if err != nil && counts.Written == 0 {
			f.Abort()
			fmt.Fprintf(stderr, "gpuspans trace: %s: %v (%s left as it was)\n", name, err, out)
			return 1
		}
		if cerr := f.Commit(); err == nil {
			err = cerr
		}
	}
	report := stderr
	if out != "-" {
		report = stdout
	}
	fmt.Fprintf(report, "%s: %d spans written to %s", name, counts.Written, out)
	if counts.Unplaced > 0 || counts.Unknown > 0 {
		fmt.Fprintf(report, " (left out: %d without a host start time, %d of an unknown kind)", counts.Unplaced, counts.Unknown)
	}
	fmt.Fprintln(report)
	if err != nil {
		fmt.Fprintf(stderr, "gpuspans trace: %s: %v (the trace holds the spans read before it)\n", name, err)
		return 1
	}
	return 0
}
