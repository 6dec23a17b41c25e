package durfmt

import (
	"math"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0ns"},
		{850, "850ns"},
		{1000, "1.00us"},
		{12345, "12.3us"},
		{999_400, "999us"},
		{1_049_000, "1.05ms"},
		{2_500_000_000, "2.50s"},
		{120 * time.Second, "120s"},
		{-1500, "-1.50us"},
		{math.MinInt64, "-9223372037s"},
	} {
		if got := Format(c.d); got != c.want {
			t.Errorf("Format(%d) = %q, want %q", int64(c.d), got, c.want)
		}
	}
}
