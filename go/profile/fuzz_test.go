package profile

import (
	"bytes"
	"testing"
)

// FuzzParse: Parse never panics, and what it accepts passes Check and is
// written and read again unchanged. Run it longer with
// go test -fuzz FuzzParse ./go/profile.
func FuzzParse(f *testing.F) {
	p := sample()
	p.Host = "h\u2028<&>\"\\"
	valid, err := Marshal(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(bytes.Replace(valid, []byte(`"mean": `), []byte(`"mean": -`), 1))
	f.Add(bytes.Replace(valid, []byte(`"n": 6`), []byte(`"n": 7`), 1))
	f.Add([]byte(`{"format":"gpuspans-profile/1","build":"b","lanes":[{"lane":"l","windows":1,"kernels":[{"name":"k","time_ns":{"n":1,"mean":1}}]}]}`))
	f.Add([]byte(`{"format":"gpuspans-profile/1","build":"b","lanes":[{"lane":"l","windows":2,"kernels":[{"name":"k","time_ns":{"n":2,"mean":2},"per_launch":[{"n":2,"mean":1,"m2":0.5},{"n":1,"mean":1}]}]}]}`))
	f.Add([]byte(`{"format":"gpuspans-profile/1","build":"b","lanes":null,"written":"2026-01-01T00:00:00+14:00"}`))
	f.Add([]byte(`{"format":"gpuspans-profile/2"}`))
	f.Add([]byte(`{"lanes":[],"format":"gpuspans-profile/1","build":"\u0000"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		if err != nil {
			return
		}
		if err := p.Check(); err != nil {
			t.Fatalf("accepted, and Check says %v", err)
		}
		m, err := Marshal(p)
		if err != nil {
			t.Fatalf("accepted, and Marshal says %v", err)
		}
		p2, err := Parse(m)
		if err != nil {
			t.Fatalf("written as\n%s\nit reads as %v", m, err)
		}
		m2, err := Marshal(p2)
		if err != nil || !bytes.Equal(m, m2) {
			t.Fatalf("written as\n%s\nread and written again as\n%s (%v)", m, m2, err)
		}
	})
}
