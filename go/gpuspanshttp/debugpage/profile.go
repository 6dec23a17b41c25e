package debugpage

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/profile"
)

// profileView is the page's "Since the last build": the hub's profile
// (Hub.StartProfile) and what changed against the build before.
type profileView struct {
	Path, Build, Before, Ignored, Written, WriteErr string
	Windows                                         uint64
	Lanes                                           []profileLaneRow
	Skipped                                         []string
	MinWindows                                      int
}

type profileLaneRow struct {
	Lane, Model, Windows string
	Time, Busy           string
	TimeMoved, BusyMoved bool
	Verdict              string
	Kernels              []string
}

// newProfileView is nil when no profile is kept.
func newProfileView(st *gpuspans.ProfileStatus) *profileView {
	if st.Path == "" {
		return nil
	}
	v := &profileView{Path: st.Path, Build: st.Build, Before: st.Before, Ignored: st.Ignored, WriteErr: st.WriteErr,
		Windows: st.Windows, MinWindows: profile.MinWindows}
	if !st.Written.IsZero() {
		v.Written = st.Written.UTC().Format(time.RFC3339)
	}
	if d := st.Since; d != nil {
		for i := range d.Lanes {
			l := &d.Lanes[i]
			r := profileLaneRow{Lane: l.Lane, Model: l.Model, Windows: fmt.Sprintf("%d / %d", l.Windows[0], l.Windows[1]),
				Time: change(l.Time[0], l.Time[1]), Busy: change(l.Busy[0], l.Busy[1]),
				TimeMoved: l.TimeMoved != 0, BusyMoved: l.BusyMoved != 0, Verdict: "no change"}
			switch {
			case l.Worse():
				r.Verdict = "worse"
			case l.Changed():
				r.Verdict = "changed"
			}
			for _, k := range l.Kernels {
				var s string
				switch k.Change {
				case profile.New:
					s = fmt.Sprintf("%s: new, %s", k.Name, us(k.After))
				case profile.Gone:
					s = fmt.Sprintf("%s: gone, was %s", k.Name, us(k.Before))
				default:
					s = fmt.Sprintf("%s: %s %s", k.Name, k.Change, change(k.Before, k.After))
				}
				r.Kernels = append(r.Kernels, s)
			}
			if l.More > 0 {
				r.Kernels = append(r.Kernels, fmt.Sprintf("and %d more", l.More))
			}
			v.Lanes = append(v.Lanes, r)
		}
		v.Skipped = d.Skipped
	}
	return v
}

func us(ns float64) string { return fmt.Sprintf("%.1f us", ns/1e3) }

// change is "a -> b (+x%)".
func change(a, b float64) string {
	p := profile.Percent(a, b)
	s := fmt.Sprintf("%s → %s (%+.1f%%)", us(a), us(b), p)
	return strings.Replace(s, "(+Inf%)", "(new)", 1)
}

// profileJSON is the snapshot JSON's "profile".
type profileJSON struct {
	Path          string        `json:"path"`
	Build         string        `json:"build"`
	Running       bool          `json:"running"`
	Windows       uint64        `json:"windows"`
	WrittenUnixNs int64         `json:"written_unix_ns,omitempty"`
	WriteError    string        `json:"write_error,omitempty"`
	Before        string        `json:"before,omitempty"`
	Ignored       string        `json:"ignored,omitempty"`
	Since         *profile.Diff `json:"since,omitempty"`
}

// profileOf is nil when no profile is kept.
func profileOf(st *gpuspans.ProfileStatus) *profileJSON {
	if st.Path == "" {
		return nil
	}
	j := &profileJSON{Path: st.Path, Build: st.Build, Running: st.Running, Windows: st.Windows, WriteError: st.WriteErr,
		Before: st.Before, Ignored: st.Ignored, Since: st.Since}
	if !st.Written.IsZero() {
		j.WrittenUnixNs = st.Written.UnixNano()
	}
	return j
}
