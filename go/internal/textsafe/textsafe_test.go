package textsafe

import "testing"

func TestUnsafe(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"attn_decode", "attn_decode"},
		{"gemm<float, 128>", "gemm<float, 128>"},
		{"a\x1b[31mred", "a?[31mred"},         // C0: ESC
		{"a\u009b31mred", "a?31mred"},         // C1: CSI
		{"del\x7f", "del?"},                   // DEL
		{"gemm\u202enoisrev", "gemm?noisrev"}, // a right-to-left override
		{"iso\u2066late\u2069", "iso?late?"},  // isolates
		{"zero\u200bwidth", "zero?width"},     // a zero-width space
		{"naïve 名前 émigré", "naïve 名前 émigré"},
	} {
		if got := Clean(c.in); got != c.want {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Clean("attn_decode") }); n != 0 {
		t.Errorf("a clean name: %v allocations", n)
	}
}
