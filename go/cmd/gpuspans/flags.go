package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newFlagSet returns a flag set for a subcommand whose usage prints the
// synopsis, the description and the flags. Errors and --help are handled
// by parseFlags.
func newFlagSet(name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: %s\n\n%s\nFlags:\n", synopsis, description)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, letting flags come before or after the
// positional arguments (flag stops at the first positional one, and
// "gpuspans trace FILE -o out.json" reads naturally), and returns the
// positional arguments. ok is false when the command should exit with
// status code: 0 after --help (usage on stdout), 2 after a bad flag (the
// error and a pointer to --help on stderr).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stdout)
				fs.Usage()
				return nil, 0, false
			}
			// The error and where to look, not the whole usage: seventy
			// lines would push the error off the screen.
			fmt.Fprintf(stderr, "%s: %v\nRun \"gpuspans %s --help\" for its flags.\n", fs.Name(), err, fs.Name())
			return nil, 2, false
		}
		rest := fs.Args()
		// Parse swallows a "--" that ends the flags: everything after it is
		// positional, even what looks like a flag.
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), 0, true
		}
		args = rest
		if len(args) == 0 {
			return pos, 0, true
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
