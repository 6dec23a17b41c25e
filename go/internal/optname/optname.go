// Package optname spells go/gpuspans.Options' fields as the other surfaces
// spell them: the command's flags, the C ABI's gs_hub_options and Python's
// Hub keywords all use the field's name in snake case (KernelSpanEvery:
// kernel_span_every), so an error from the hub can name what the caller
// wrote.
package optname

import (
	"regexp"
	"strings"
	"unicode"
)

// Snake spells an Options field in snake case.
func Snake(field string) string {
	var b strings.Builder
	for i, r := range field {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

var field = regexp.MustCompile(`Options\.([A-Z][A-Za-z]*)`)

// Rewrite returns a hub error's message with its "gpuspans: " prefix cut
// and each Options field it names spelt by name: name("KernelSpanEvery")
// for "Options.KernelSpanEvery".
func Rewrite(msg string, name func(field string) string) string {
	msg = strings.TrimPrefix(msg, "gpuspans: ")
	return field.ReplaceAllStringFunc(msg, func(m string) string { return name(m[len("Options."):]) })
}
