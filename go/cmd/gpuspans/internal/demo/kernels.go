package demo

import (
	"fmt"
	"strings"
	"time"
)

// MaxKernelDuration bounds a demo kernel: the spin kernel busy-waits a GPU
// for that long, and a demo step should stay well under a second.
const MaxKernelDuration = time.Second

// maxKernelsPerList bounds a kernel list, so a typo cannot make a step of
// thousands of launches.
const maxKernelsPerList = 64

// Kernel is one kernel of a demo lane: a name (its label in metrics) and
// how long it runs on the GPU. A plain value.
type Kernel struct {
	Name     string
	Duration time.Duration
}

// Kernels is a list of kernels, and a flag.Value that reads one written
// "name=duration,name=duration" (durations as time.ParseDuration reads
// them: "450us", "1.5ms"). An empty string is an empty list. A plain
// value: Set writes it, so it is not safe to use while Set may run (flag
// parsing calls Set once, before anything reads the list).
type Kernels []Kernel

// String writes the list as Set reads it.
func (k Kernels) String() string {
	parts := make([]string, len(k))
	for i, x := range k {
		parts[i] = x.Name + "=" + x.Duration.String()
	}
	return strings.Join(parts, ",")
}

// Set replaces the list with the one s describes. Errors name the bad
// entry; the list is unchanged then.
func (k *Kernels) Set(s string) error {
	l, err := ParseKernels(s)
	if err != nil {
		return err
	}
	*k = l
	return nil
}

// Total is the sum of the kernels' durations: the GPU time of the list.
func (k Kernels) Total() time.Duration {
	var t time.Duration
	for _, x := range k {
		t += x.Duration
	}
	return t
}

// ParseKernels reads "name=duration,..." (see Kernels). Names must be
// distinct within the list; durations positive and at most
// MaxKernelDuration. Safe from any goroutine.
func ParseKernels(s string) (Kernels, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Kernels{}, nil
	}
	var out Kernels
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name, dur, ok := strings.Cut(strings.TrimSpace(part), "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("kernel %q: want name=duration, e.g. attn=450us", part)
		}
		d, err := time.ParseDuration(strings.TrimSpace(dur))
		if err != nil {
			return nil, fmt.Errorf("kernel %q: %v", name, err)
		}
		if d <= 0 || d > MaxKernelDuration {
			return nil, fmt.Errorf("kernel %q: duration %v outside (0, %v]", name, d, MaxKernelDuration)
		}
		if seen[name] {
			return nil, fmt.Errorf("kernel %q listed twice", name)
		}
		seen[name] = true
		out = append(out, Kernel{Name: name, Duration: d})
	}
	if len(out) > maxKernelsPerList {
		return nil, fmt.Errorf("%d kernels in one list, more than %d", len(out), maxKernelsPerList)
	}
	return out, nil
}
