package golden

import "testing"

func TestDiff(t *testing.T) {
	for _, c := range []struct{ want, got, diff string }{
		{"a\nb\n", "a\nb\n", ""},
		{"a\nb\n", "a\nc\n", "  line 1: a\n- line 2: b\n+ line 2: c\n(want 3 lines, got 3)"},
		{"a\n", "a\nb\n", "  line 1: a\n- line 2: \n+ line 2: b\n(want 2 lines, got 3)"},
		{"x", "", "- line 1: x\n+ line 1: \n(want 1 lines, got 1)"},
		{"a", "a\nb", "  line 1: a\n- line 2: (end of file)\n+ line 2: b\n(want 1 lines, got 2)"},
	} {
		if d := diff([]byte(c.want), []byte(c.got)); d != c.diff {
			t.Errorf("diff(%q, %q) =\n%s\nwant\n%s", c.want, c.got, d, c.diff)
		}
	}
}
