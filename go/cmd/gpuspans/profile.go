package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gpuspans/gpuspans/go/profile"
)

const profileDescription = `A GPU profile is what kernel windows measured of one build, per lane and
device model, kept in a file across restarts and deploys (go/profile).

  gpuspans profile show FILE            the profile as a table: per lane its
                                        time and busy time per step, idle by
                                        cause, the heaviest kernels
  gpuspans profile diff BEFORE AFTER    what changed between two builds (or
                                        two machines, with --any_model)

Each takes --json (show: the profile; diff: the comparison) and --help.
Exit status: 0 done, 1 a file could not be read, 2 bad usage, and for diff
with --fail_on_worse, 3 when a lane got worse.
`

const profileShowDescription = `Prints a GPU profile as a table: the build that wrote it, when and where;
per lane and device model, its windows and spans, its time per step outside
kernel windows and its busy time per step (us), its idle time per step by
cause, and its heaviest kernels with their time and launches per step.
--json prints the profile itself (the file's JSON, checked).
`

const profileDiffDescription = `Compares two GPU profiles lane by lane (by device model and lane name): a
lane's time and busy time per step, and the kernels that grew, shrank, came
new or went, largest first. A change counts when it is past its ratio (10%
for a kernel, and 2 us; 5% for a lane) and Welch's t-test over the windows
rejects chance; counted changes are starred. A lane with fewer than
--min_windows windows in either profile, or in only one, is listed as not
compared. --json prints the comparison as JSON.

Exit status: 0 whatever changed, unless --fail_on_worse: then 3 when a lane's
time or busy time per step grew, or a kernel grew or came new (for a CI step
after a benchmark run). 1 a file could not be read, 2 bad usage. A diff in
which no lane was compared is not worse: it says so on standard error.
`

// profileCmd runs "gpuspans profile show|diff".
func profileCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "profile: want show or diff (see %s profile --help)\n", cmdName)
		return 2
	}
	switch args[0] {
	case "show":
		return profileShow(args[1:], stdout, stderr)
	case "diff":
		return profileDiff(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprintf(stdout, "Usage: %s\n\n%s", named("gpuspans profile show FILE | gpuspans profile diff BEFORE AFTER"), named(profileDescription))
		return 0
	}
	fmt.Fprintf(stderr, "profile: unknown subcommand %q: want show or diff (see %s profile --help)\n", args[0], cmdName)
	return 2
}

func profileShow(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("profile show", "gpuspans profile show [--json] [--top N] FILE", profileShowDescription)
	asJSON := fs.Bool("json", false, "print the profile as JSON")
	top := fs.Int("top", 10, "kernels listed per lane, the heaviest; 0 lists all the profile holds")
	pos, code, ok := parseFlags(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "profile show: want one profile file, got %d arguments (see %s profile show --help)\n", len(pos), cmdName)
		return 2
	}
	if *top < 0 {
		fmt.Fprintf(stderr, "profile show: --top %d: want 0 (all) or more\n", *top)
		return 2
	}
	p, err := profile.Read(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "gpuspans profile show: %v\n", err)
		return 1
	}
	if *asJSON {
		b, err := profile.Marshal(p)
		if err == nil {
			_, err = stdout.Write(b)
		}
		return failed(err, "profile show", stderr)
	}
	var b strings.Builder
	writeProfile(&b, pos[0], p, *top)
	_, err = io.WriteString(stdout, b.String())
	return failed(err, "profile show", stderr)
}

// failed is the exit status after writing the output: 1 if it failed.
func failed(err error, cmd string, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "gpuspans %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// writeProfile writes p, read from name, as tables a person reads: the
// lanes, their idle by cause, and each lane's heaviest top kernels (0:
// all).
func writeProfile(b *strings.Builder, name string, p *profile.Profile, top int) {
	fmt.Fprintf(b, "%s: build %q, written %s", name, p.Build, p.Written.UTC().Format("2006-01-02 15:04:05 UTC"))
	if p.Host != "" {
		fmt.Fprintf(b, " on %q", p.Host)
	}
	fmt.Fprintf(b, ", %d lanes\n", len(p.Lanes))
	if len(p.Lanes) == 0 {
		return
	}
	b.WriteString("\nper step (a lane span), the means over kernel windows; time is outside windows\n")
	fmt.Fprintf(b, "%-14s %-26s %-8s %8s %9s %12s %12s %6s\n", "lane", "device", "driver", "windows", "spans", "time", "busy", "busy%")
	for i := range p.Lanes {
		l := &p.Lanes[i]
		time, busyPct := "-", "-"
		if l.Time.N > 0 && l.Time.Mean > 0 {
			time = profile.Micros(l.Time.Mean)
			busyPct = fmt.Sprintf("%.1f%%", 100*l.Busy.Mean/l.Time.Mean)
		}
		fmt.Fprintf(b, "%-14.40s %-26.40s %-8.16s %8d %9d %12s %12s %6s\n", l.Lane, profile.ModelName(l.Model), orDash(l.Driver), l.Windows, l.Spans, time, profile.Micros(l.Busy.Mean), busyPct)
	}
	b.WriteString("\nidle per step, by what the device waited for\n")
	fmt.Fprintf(b, "%-14s %-26s %12s %12s %12s %12s %12s\n", "lane", "device", "host", "launch", "copy", "wait", "other")
	for i := range p.Lanes {
		l := &p.Lanes[i]
		if l.Time.N == 0 { // no window settled: no idle measured
			fmt.Fprintf(b, "%-14.40s %-26.40s %12s %12s %12s %12s %12s\n", l.Lane, profile.ModelName(l.Model), "-", "-", "-", "-", "-")
			continue
		}
		c := l.Idle
		fmt.Fprintf(b, "%-14.40s %-26.40s %12s %12s %12s %12s %12s\n", l.Lane, profile.ModelName(l.Model), profile.Micros(c.Host), profile.Micros(c.Launch), profile.Micros(c.Copy), profile.Micros(c.Wait), profile.Micros(c.Other))
	}
	for i := range p.Lanes {
		l := &p.Lanes[i]
		fmt.Fprintf(b, "\nkernels of lane %q on %s, per step, the heaviest first\n", l.Lane, profile.ModelName(l.Model))
		if len(l.Kernels) == 0 {
			b.WriteString("  none measured\n")
			continue
		}
		fmt.Fprintf(b, "%12s %7s %9s  %s\n", "time", "busy%", "launches", "name")
		n := len(l.Kernels)
		if top > 0 && n > top {
			n = top
		}
		for _, k := range l.Kernels[:n] {
			share := "-"
			if l.Busy.Mean > 0 {
				share = fmt.Sprintf("%.1f%%", 100*k.Time.Mean/l.Busy.Mean)
			}
			fmt.Fprintf(b, "%12s %7s %9.1f  %s\n", profile.Micros(k.Time.Mean), share, k.Launches, k.Name)
		}
		if rest := len(l.Kernels) - n; rest > 0 {
			fmt.Fprintf(b, "  and %d more (--top 0 lists them)\n", rest)
		}
		if l.KernelsCut > 0 {
			fmt.Fprintf(b, "  and %d names the profile left out, each %s or less\n", l.KernelsCut, profile.Micros(l.CutBelow))
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func profileDiff(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("profile diff", "gpuspans profile diff [flags] BEFORE AFTER", profileDiffDescription)
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	anyModel := fs.Bool("any_model", false, "compare a lane with the same lane on another device model where its own model is\nnot in the other profile (two machines of different GPUs)")
	minWindows := fs.Uint64("min_windows", profile.MinWindows, "windows a lane needs in both profiles to be compared")
	failOnWorse := fs.Bool("fail_on_worse", false, "exit 3 when a lane got worse (its time or busy time per step grew, or a kernel\ngrew or came new)")
	pos, code, ok := parseFlags(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "profile diff: want two profile files, BEFORE and AFTER, got %d arguments (see %s profile diff --help)\n", len(pos), cmdName)
		return 2
	}
	if *minWindows == 0 {
		fmt.Fprintf(stderr, "profile diff: --min_windows 0: want 1 or more\n")
		return 2
	}
	before, err1 := profile.Read(pos[0])
	after, err2 := profile.Read(pos[1])
	for _, err := range []error{err1, err2} {
		if err != nil {
			fmt.Fprintf(stderr, "gpuspans profile diff: %v\n", err)
		}
	}
	if err1 != nil || err2 != nil {
		return 1
	}
	d := profile.Compare(before, after, profile.CompareOptions{AnyModel: *anyModel, MinWindows: *minWindows})
	var err error
	if *asJSON {
		// Lists, if empty, as [] rather than null.
		if d.Lanes == nil {
			d.Lanes = []profile.LaneDiff{}
		}
		if d.Skipped == nil {
			d.Skipped = []string{}
		}
		for i := range d.Lanes {
			if d.Lanes[i].Kernels == nil {
				d.Lanes[i].Kernels = []profile.KernelChange{}
			}
		}
		e := json.NewEncoder(stdout)
		e.SetEscapeHTML(false)
		e.SetIndent("", " ")
		err = e.Encode(d)
	} else {
		err = d.WriteTable(stdout)
	}
	if code := failed(err, "profile diff", stderr); code != 0 {
		return code
	}
	if len(d.Lanes) == 0 {
		fmt.Fprintf(stderr, "gpuspans profile diff: no lane compared (%d not: see why in the output)\n", len(d.Skipped))
	}
	if *failOnWorse && d.Worse() {
		fmt.Fprintf(stderr, "gpuspans profile diff: %s is worse than %s (--fail_on_worse)\n", pos[1], pos[0])
		return 3
	}
	return 0
}
