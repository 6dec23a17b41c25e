// Package textsafe states, once, which characters of a name (a lane's, a
// kernel's, a build's) may reach a terminal, a log or a page: none that
// a terminal acts on or that reorders the text around it. A name from the
// engine is held to it when it is given (go/gpuspans' names are printable
// characters, which excludes these), a kernel name from CUPTI and a name
// read from a profile file when they come in.
package textsafe

import "unicode"

// Unsafe reports whether r must not reach a terminal: a C0 or C1 control
// character or DEL (a terminal's escapes: "\x1b[31m", "\u009b31m"), or a
// format character (bidi overrides and isolates such as U+202E, zero-width
// ones), which reorder or hide what a reader sees.
func Unsafe(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || unicode.Is(unicode.Cf, r)
}

// Clean returns s with every unsafe character replaced by '?': s itself,
// without allocating, when it has none.
func Clean(s string) string {
	clean := true
	for _, r := range s {
		if Unsafe(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if Unsafe(r) {
			r = '?'
		}
		out = append(out, r)
	}
	return string(out)
}
