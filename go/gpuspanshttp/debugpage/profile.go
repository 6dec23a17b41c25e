package debugpage

import (
	"fmt"
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
	LaneRatio, KernelRatio, KernelMin               string // what counts as a change
}

type profileLaneRow struct {
	Lane, Model, Windows string
	Time, Busy           string
	TimeMoved, BusyMoved bool
	Worse                bool
	Verdict              string
	Kernels              []string
}

// newProfileView is nil when no profile is kept.
func newProfileView(st *gpuspans.ProfileStatus) *profileView {
	if st.Path == "" {
		return nil
	}
	v := &profileView{Path: st.Path, Build: st.Build, Before: st.Before, Ignored: st.Ignored, WriteErr: st.WriteErr,
		Windows: st.Windows, MinWindows: profile.MinWindows,
		LaneRatio: fmt.Sprintf("%g%%", 100*profile.LaneRatio), KernelRatio: fmt.Sprintf("%g%%", 100*profile.MovedRatio), KernelMin: profile.Micros(profile.MovedMin)}
	if !st.Written.IsZero() {
		v.Written = st.Written.UTC().Format(time.RFC3339)
	}
	if d := st.Since; d != nil {
		for i := range d.Lanes {
			l := &d.Lanes[i]
			r := profileLaneRow{Lane: l.Lane, Model: l.Model, Windows: fmt.Sprintf("%d / %d", l.Windows[0], l.Windows[1]),
				Time: change(l.Time[0], l.Time[1]), Busy: change(l.Busy[0], l.Busy[1]),
				TimeMoved: l.TimeMoved != 0, BusyMoved: l.BusyMoved != 0, Worse: l.Worse(), Verdict: l.Verdict()}
			for _, k := range l.Kernels {
				var s string
				switch k.Change {
				case profile.New:
					s = fmt.Sprintf("%s: new, %s", k.Label(), profile.Micros(k.After))
				case profile.Gone:
					s = fmt.Sprintf("%s: gone, was %s", k.Label(), profile.Micros(k.Before))
				default:
					s = fmt.Sprintf("%s: %s %s", k.Label(), k.Change, change(k.Before, k.After))
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

// change is "a → b (+x%)".
func change(a, b float64) string {
	return fmt.Sprintf("%s → %s (%s)", profile.Micros(a), profile.Micros(b), profile.PercentText(a, b))
}

// profileJSON is the snapshot JSON's "profile", the schema's Profile.
type profileJSON struct {
	Path                string          `json:"path"`
	Build               string          `json:"build"`
	Running             bool            `json:"running"`
	Windows             uint64          `json:"windows"`
	WrittenUnixNs       int64           `json:"written_unix_ns"`
	WriteError          string          `json:"write_error"`
	Before              string          `json:"before"`
	BeforeWrittenUnixNs int64           `json:"before_written_unix_ns"`
	Ignored             string          `json:"ignored"`
	Since               []laneSinceJSON `json:"since"`
	NotCompared         []string        `json:"not_compared"`
}

type laneSinceJSON struct {
	DeviceModel      string             `json:"device_model"`
	Lane             string             `json:"lane"`
	DeviceModelAfter string             `json:"device_model_after"`
	Driver           string             `json:"driver"`
	DriverAfter      string             `json:"driver_after"`
	WindowsBefore    uint64             `json:"windows_before"`
	WindowsAfter     uint64             `json:"windows_after"`
	TimeBeforeNs     float64            `json:"time_before_ns"`
	TimeAfterNs      float64            `json:"time_after_ns"`
	BusyBeforeNs     float64            `json:"busy_before_ns"`
	BusyAfterNs      float64            `json:"busy_after_ns"`
	TimeMoved        int                `json:"time_moved"`
	BusyMoved        int                `json:"busy_moved"`
	Kernels          []kernelChangeJSON `json:"kernels"`
	More             int                `json:"more"`
}

type kernelChangeJSON struct {
	Name     string  `json:"name"`
	Launch   uint32  `json:"launch"`
	Change   string  `json:"change"`
	BeforeNs float64 `json:"before_ns"`
	AfterNs  float64 `json:"after_ns"`
}

// profileOf is nil while no profile was ever kept.
func profileOf(st *gpuspans.ProfileStatus) *profileJSON {
	if st.Path == "" {
		return nil
	}
	j := &profileJSON{Path: st.Path, Build: st.Build, Running: st.Running, Windows: st.Windows, WriteError: st.WriteErr,
		Before: st.Before, Ignored: st.Ignored, Since: []laneSinceJSON{}, NotCompared: []string{}}
	if !st.Written.IsZero() {
		j.WrittenUnixNs = st.Written.UnixNano()
	}
	if !st.BeforeWritten.IsZero() {
		j.BeforeWrittenUnixNs = st.BeforeWritten.UnixNano()
	}
	if d := st.Since; d != nil {
		j.NotCompared = append(j.NotCompared, d.Skipped...)
		for i := range d.Lanes {
			l := &d.Lanes[i]
			lj := laneSinceJSON{DeviceModel: l.Model, Lane: l.Lane, DeviceModelAfter: l.Model2, Driver: l.Driver, DriverAfter: l.Driver2,
				WindowsBefore: l.Windows[0], WindowsAfter: l.Windows[1], TimeBeforeNs: l.Time[0], TimeAfterNs: l.Time[1],
				BusyBeforeNs: l.Busy[0], BusyAfterNs: l.Busy[1], TimeMoved: l.TimeMoved, BusyMoved: l.BusyMoved, More: l.More,
				Kernels: []kernelChangeJSON{}}
			for _, k := range l.Kernels {
				lj.Kernels = append(lj.Kernels, kernelChangeJSON{Name: k.Name, Launch: uint32(k.Launch), Change: string(k.Change), BeforeNs: k.Before, AfterNs: k.After})
			}
			j.Since = append(j.Since, lj)
		}
	}
	return j
}
