// Package durfmt formats durations for people: the latency table and the
// live page share it, and the live page must not link the span-file code
// (and protobuf) that the table's package needs.
package durfmt

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Format writes d with three significant digits in the largest unit that
// keeps it at least 1: "850ns", "12.3us", "1.05ms", "2.50s". It is shorter
// than time.Duration.String's full precision, which a table of estimates
// does not have.
func Format(d time.Duration) string {
	if d < 0 {
		if d == math.MinInt64 {
			d++ // its negation overflows; three digits cannot show the lost nanosecond
		}
		return "-" + Format(-d)
	}
	units := []struct {
		size time.Duration
		name string
	}{{time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}}
	for _, u := range units {
		if d >= u.size {
			v := float64(d) / float64(u.size)
			return fmt.Sprintf("%.*f%s", decimals(v), v, u.name)
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// decimals is how many decimals give v three significant digits.
func decimals(v float64) int {
	switch {
	case v >= 99.95:
		return 0
	case v >= 9.995:
		return 1
	}
	return 2
}
