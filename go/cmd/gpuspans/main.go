// Command gpuspans runs the gpuspans demo serving loop, converts and
// summarises span files, shows and compares GPU profiles, and measures
// gpuspans' overhead on this machine.
// Run "gpuspans help" for the subcommands and "gpuspans demo --help" (or
// any subcommand's --help) for their flags.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// usageLines are the synopsis of each command (after the command's name)
// and what it does, one line of text each.
var usageLines = [][2]string{
	{"demo [flags]", "run a small serving engine loop with telemetry:"},
	{"", "a live page, /metrics, control endpoints, and a"},
	{"", "trace and summary on exit (try it: no flags needed)"},
	{"trace [-o OUT] FILE", "convert a span file to a timeline trace (Perfetto)"},
	{"trace summary FILE", "print the per-lane and per-kernel latency table"},
	{"profile show FILE", "print a GPU profile: per lane, time and busy"},
	{"", "per step, idle by cause, the heaviest kernels"},
	{"profile diff BEFORE AFTER", "what changed between two builds' GPU profiles"},
	{"bench [flags]", "measure gpuspans' overhead on this machine"},
	{"help", "this text"},
}

// usage is the top-level help, naming the command as the user ran it
// (cmdName).
func usage() string {
	var b strings.Builder
	b.WriteString("gpuspans: always-on GPU timing telemetry for LLM serving engines.\n\nUsage:\n")
	width := len(cmdName) + 1 + 21 // "trace [-o OUT] FILE" and two spaces
	for _, l := range usageLines {
		form := ""
		if l[0] != "" {
			form = cmdName + " " + l[0]
		}
		if len(form) > width { // its text on the next line
			fmt.Fprintf(&b, "  %s\n", form)
			form = ""
		}
		fmt.Fprintf(&b, "  %-*s %s\n", width, form, l[1])
	}
	fmt.Fprintf(&b, "\nRun \"%s COMMAND --help\" for a command's flags.\n", cmdName)
	return b.String()
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run dispatches to a subcommand and returns the exit status: 0 done, 1 the
// command failed, 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	switch args[0] {
	case "demo":
		return demoCmd(args[1:], stdout, stderr)
	case "trace":
		return traceCmd(args[1:], stdout, stderr)
	case "profile":
		return profileCmd(args[1:], stdout, stderr)
	case "bench":
		return benchCmd(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage())
		return 0
	}
	fmt.Fprintf(stderr, "gpuspans: unknown command %q\n\n%s", args[0], usage())
	return 2
}
