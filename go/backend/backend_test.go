package backend

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestMaxSlotsMatchesCore checks MaxSlots against the C core's own limit and
// the limit its header documents, which the Go code cannot import.
func TestMaxSlotsMatchesCore(t *testing.T) {
	for _, c := range []struct {
		file  string
		re    string // its one group is the limit
		shift bool   // the group is log2 of the limit
	}{
		{"../../cuda/src/pool.cc", `constexpr uint32_t kMaxSlots = 1u << (\d+);`, true},
		{"../../cuda/include/gpuspans/gpuspans.h", `slots must be 1\.\.(\d+)`, false},
	} {
		src, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(c.re).FindSubmatch(src)
		if m == nil {
			t.Fatalf("%s: no match for %q", c.file, c.re)
		}
		n, err := strconv.Atoi(string(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		if c.shift {
			n = 1 << n
		}
		if n != MaxSlots {
			t.Errorf("%s: the limit is %d, backend.MaxSlots is %d", c.file, n, MaxSlots)
		}
	}
}
