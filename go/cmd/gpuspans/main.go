// Command gpuspans runs the gpuspans demo serving loop, converts and
// summarises span files, and measures gpuspans' overhead on this machine.
// Run "gpuspans help" for the subcommands and "gpuspans demo --help" (or
// any subcommand's --help) for their flags.
package main

import (
	"fmt"
	"io"
	"os"
)

const usageText = `gpuspans: always-on GPU timing telemetry for LLM serving engines.

Usage:
  gpuspans demo [flags]                  run a small serving engine loop with telemetry:
                                         a live page, /metrics, control endpoints, and a
                                         trace and summary on exit (try it: no flags needed)
  gpuspans trace [-o OUT] FILE           convert a span file to a timeline trace (Perfetto)
  gpuspans trace summary FILE            print the per-lane and per-kernel latency table
  gpuspans bench [flags]                 measure gpuspans' overhead on this machine
  gpuspans help                          this text

Run "gpuspans COMMAND --help" for a command's flags.
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run dispatches to a subcommand and returns the exit status: 0 done, 1 the
// command failed, 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	switch args[0] {
	case "demo":
		return demoCmd(args[1:], stdout, stderr)
	case "trace":
		return traceCmd(args[1:], stdout, stderr)
	case "bench":
		return benchCmd(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usageText)
		return 0
	}
	fmt.Fprintf(stderr, "gpuspans: unknown command %q\n\n%s", args[0], usageText)
	return 2
}
