package gpuspans

import (
	"flag"
	"strings"
	"testing"
)

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]Level{
		"off": LevelOff, "step": LevelStep, "kernel": LevelKernel,
		"KERNEL": LevelKernel, " Step ": LevelStep,
	} {
		got, err := ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "on", "kernels", "2"} {
		if _, err := ParseLevel(in); err == nil || !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("ParseLevel(%q) error = %v; want one naming the input", in, err)
		}
	}
}

func TestLevelText(t *testing.T) {
	for _, l := range []Level{LevelOff, LevelStep, LevelKernel} {
		b, err := l.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Level
		if err := back.UnmarshalText(b); err != nil || back != l {
			t.Errorf("round trip of %v: %v, %v", l, back, err)
		}
	}
	if _, err := Level(7).MarshalText(); err == nil {
		t.Error("MarshalText(Level(7)) succeeded")
	}
	if s := Level(7).String(); s != "Level(7)" {
		t.Errorf("Level(7).String() = %q", s)
	}
	l := LevelStep
	if err := l.UnmarshalText([]byte("junk")); err == nil || l != LevelStep {
		t.Errorf("UnmarshalText(junk) = %v, level %v; want an error and no change", err, l)
	}
	// flag.TextVar is how a binary takes the level on its command line.
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.TextVar(&l, "level", LevelOff, "")
	if err := fs.Parse([]string{"-level=kernel"}); err != nil || l != LevelKernel {
		t.Errorf("flag: %v, %v", l, err)
	}
}
