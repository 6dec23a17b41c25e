package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// cmdName is how the user ran this command, for the hints that name it:
// "gpuspans", or what $GPUSPANS_COMMAND says (tools/gpuspans.sh sets it to
// itself, which is what a README user types).
var cmdName = commandName(os.Getenv("GPUSPANS_COMMAND"))

func commandName(env string) string {
	if env = strings.TrimSpace(env); env != "" {
		return env
	}
	return "gpuspans"
}

// named rewrites the command forms in a help text (`"gpuspans trace`,
// "Usage: gpuspans demo", "gpuspans profile") to cmdName.
func named(s string) string {
	if cmdName == "gpuspans" {
		return s
	}
	return strings.NewReplacer(`"gpuspans `, `"`+cmdName+" ", "gpuspans demo ", cmdName+" demo ",
		"gpuspans trace", cmdName+" trace", "gpuspans bench", cmdName+" bench", "gpuspans profile", cmdName+" profile").Replace(s)
}

// newFlagSet returns a flag set for a subcommand whose usage prints the
// synopsis, the description and the flags. Errors and --help are handled
// by parseFlags.
func newFlagSet(name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: %s\n\n%s\nFlags:\n", named(synopsis), named(description))
		printDefaults(w, fs)
	}
	return fs
}

// printDefaults is flag.PrintDefaults with the flags written as the help
// texts and the README write them, --name (the flag package takes either).
func printDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		var b strings.Builder
		fmt.Fprintf(&b, "  --%s", f.Name)
		typ, usage := flag.UnquoteUsage(f)
		if typ != "" {
			b.WriteString(" " + typ)
		}
		b.WriteString("\n    \t")
		b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "0s" {
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				fmt.Fprintf(&b, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(&b, " (default %v)", f.DefValue)
			}
		}
		fmt.Fprintln(w, b.String())
	})
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
			// lines would push the error off the screen. The flag package
			// names flags with one dash; the help writes two.
			msg := strings.NewReplacer("for flag -", "for flag --", "defined: -", "defined: --").Replace(err.Error())
			fmt.Fprintf(stderr, "%s: %s\nRun \"%s %s --help\" for its flags.\n", fs.Name(), msg, cmdName, fs.Name())
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

// durationFlag is a time.Duration flag whose error says what a duration
// looks like: time.ParseDuration's "missing unit in duration" does not
// say which units there are.
// labelsFlag is a list of name=value, as --metric_labels takes it.
type labelsFlag map[string]string

func (l *labelsFlag) String() string {
	var parts []string
	for k, v := range *l {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (l *labelsFlag) Set(v string) error {
	m := map[string]string{}
	for _, part := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(part, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q: want name=value", part)
		}
		if _, dup := m[k]; dup {
			return fmt.Errorf("label %s given twice", k)
		}
		m[k] = val
	}
	*l = m
	return nil
}

type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(v string) error {
	x, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("want a number with a unit: 10s, 1.5m, 2h (units ns, us, ms, s, m, h)")
	}
	*d = durationFlag(x)
	return nil
}
