package optname

import "testing"

func TestSnake(t *testing.T) {
	for field, want := range map[string]string{
		"KernelSpanEvery":   "kernel_span_every",
		"Slots":             "slots",
		"RawKernelSpans":    "raw_kernel_spans",
		"KernelWindowEvery": "kernel_window_every",
		"StateMirror":       "state_mirror",
	} {
		if got := Snake(field); got != want {
			t.Errorf("Snake(%q) = %q, want %q", field, got, want)
		}
	}
}

func TestRewrite(t *testing.T) {
	flag := func(f string) string { return "--" + Snake(f) }
	for msg, want := range map[string]string{
		"gpuspans: Options.KernelLabels is -1, want 1..1024 (0: 32)":          "--kernel_labels is -1, want 1..1024 (0: 32)",
		"gpuspans: Options.Lanes[2]: duplicate lane \"a\"":                    "--lanes[2]: duplicate lane \"a\"",
		"gpuspans: Options.KernelTiming is cupti but Options.KernelTracer is": "--kernel_timing is cupti but --kernel_tracer is",
		"no field here": "no field here",
	} {
		if got := Rewrite(msg, flag); got != want {
			t.Errorf("Rewrite(%q) = %q, want %q", msg, got, want)
		}
	}
}
