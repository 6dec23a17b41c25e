package gpuspans

import (
	"fmt"
	"strings"
)

// Level is how much the hub records. Levels are ordered: each one records
// everything the one below it does.
type Level uint32

const (
	// LevelOff records nothing: the span entry points return at their
	// inlined checks (see each one's doc).
	LevelOff Level = iota
	// LevelStep counts steps on the host only; nothing touches the GPU.
	LevelStep
	// LevelKernel records GPU spans: lane spans on every step and kernel
	// spans on one step in KernelSpanEvery.
	LevelKernel
)

// The hub's state word holds the level in its low bits and the armed bit
// above them, so that one atomic load tells a span path whether to go on and
// one compare-and-swap changes both (lowering the level disarms in the same
// update, so no kernel span can begin below Kernel).
// tracerBit, above the open-pool bit of the mirror (MirrorPools), is set
// while the kernel tracer is open, so that BeginStep, which alone may close
// it, has work at any level.
const (
	levelMask uint32 = 0x3
	armedBit  uint32 = 0x4
	tracerBit uint32 = 0x10
)

// String names the level as ParseLevel accepts it ("off", "step", "kernel").
func (l Level) String() string {
	switch l {
	case LevelOff:
		return "off"
	case LevelStep:
		return "step"
	case LevelKernel:
		return "kernel"
	}
	return fmt.Sprintf("Level(%d)", uint32(l))
}

// valid reports whether l is one of the defined levels.
func (l Level) valid() bool { return l <= LevelKernel }

// ParseLevel reads a level name: "off", "step" or "kernel", in any case,
// surrounding spaces ignored. Anything else is an error naming the input.
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off":
		return LevelOff, nil
	case "step":
		return LevelStep, nil
	case "kernel":
		return LevelKernel, nil
	}
	return LevelOff, fmt.Errorf("gpuspans: unknown level %q (want off, step or kernel)", s)
}

// MarshalText implements encoding.TextMarshaler; an undefined level is an
// error rather than text that ParseLevel would refuse later.
func (l Level) MarshalText() ([]byte, error) {
	if !l.valid() {
		return nil, fmt.Errorf("gpuspans: cannot marshal invalid level %v", l)
	}
	return []byte(l.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseLevel, so a
// Level works with flag.TextVar and in JSON or YAML configuration. On error
// *l is left unchanged.
func (l *Level) UnmarshalText(text []byte) error {
	v, err := ParseLevel(string(text))
	if err != nil {
		return err
	}
	*l = v
	return nil
}
