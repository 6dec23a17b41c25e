package control

import (
	"encoding/json"
	"io"
	"mime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Request bodies: plain text or a JSON object of one field.

// parseLevelRequest reads a level from a request body of the given
// Content-Type, as the level endpoint does. Errors say what was wrong and
// what is expected.
func parseLevelRequest(contentType string, body []byte) (gpuspans.Level, error) {
	var v struct {
		Level *string `json:"level"`
	}
	text, err := valueText(contentType, body, "level", &v, func() (string, bool) {
		if v.Level == nil {
			return "", false
		}
		return *v.Level, true
	})
	if err != nil {
		return 0, err
	}
	l, err := gpuspans.ParseLevel(text)
	if err != nil {
		return 0, badRequest("bad level %q: want off, step or kernel", truncate(text))
	}
	return l, nil
}

// parseKernelTimingRequest reads kernel_timing from a request body of the
// given Content-Type, as its endpoint does: events, auto, cupti or attached.
func parseKernelTimingRequest(contentType string, body []byte) (gpuspans.KernelTiming, error) {
	var v struct {
		Timing *string `json:"kernel_timing"`
	}
	text, err := valueText(contentType, body, "kernel_timing", &v, func() (string, bool) {
		if v.Timing == nil {
			return "", false
		}
		return *v.Timing, true
	})
	if err != nil {
		return 0, err
	}
	k, err := gpuspans.ParseKernelTiming(text)
	if err != nil {
		return 0, badRequest("bad kernel_timing %q: want events, auto, cupti or attached", truncate(text))
	}
	return k, nil
}

// parseKernelSpanEveryRequest reads kernel_span_every from a request body
// of the given Content-Type, as its endpoint does: a decimal integer in
// 1..gpuspans.MaxKernelSpanEvery. Errors say what was wrong and what is expected.
func parseKernelSpanEveryRequest(contentType string, body []byte) (int, error) {
	var v struct {
		Every *json.Number `json:"kernel_span_every"`
	}
	text, err := valueText(contentType, body, "kernel_span_every", &v, func() (string, bool) {
		if v.Every == nil {
			return "", false
		}
		return v.Every.String(), true
	})
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	if err != nil || n < 1 || n > gpuspans.MaxKernelSpanEvery {
		return 0, badRequest("bad kernel_span_every %q: want an integer from 1 to %d", truncate(text), gpuspans.MaxKernelSpanEvery)
	}
	return int(n), nil
}

// valueText returns the value's text: the body itself for plain text, or
// the field of a JSON object (decoded into v and read back with get).
func valueText(contentType string, body []byte, field string, v interface{}, get func() (string, bool)) (string, error) {
	if !isJSON(contentType) {
		if !utf8Printable(body) {
			return "", badRequest("the body is not printable text; send the %s as plain text or as JSON {%q: ...}", field, field)
		}
		return strings.TrimSpace(string(body)), nil
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return "", badRequest("bad JSON body: %v; want {%q: ...}", err, field)
	}
	if dec.More() {
		return "", badRequest("bad JSON body: data after the object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", badRequest("bad JSON body: data after the object")
	}
	text, ok := get()
	if !ok {
		return "", badRequest("JSON body has no %q field", field)
	}
	return text, nil
}

// isJSON reports whether a Content-Type is application/json (parameters
// such as charset allowed).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// utf8Printable reports whether b is text a person could have typed: valid
// UTF-8 without control characters other than white space.
func utf8Printable(b []byte) bool {
	s := string(b)
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}

// truncate shortens s for an error message, so a large bad value is not
// echoed back whole.
func truncate(s string) string {
	const max = 32
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
