package otlp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// ErrProtocolMismatch is wrapped by the errors of sends that failed
// because the collector at the endpoint speaks another protocol than the
// exporter (gRPC where OTLP/HTTP was sent, or the reverse; plaintext
// where TLS was sent). Their message names what the
// collector speaks and the fix. Exporter.LastError returns them, and the
// exporter logs them.
var ErrProtocolMismatch = errors.New("otlp: protocol mismatch")

// mismatchError is a send's error explained.
type mismatchError struct {
	why string
	err error
}

func (m *mismatchError) Error() string   { return "protocol mismatch: " + m.why + "; " + m.err.Error() }
func (m *mismatchError) Unwrap() []error { return []error{ErrProtocolMismatch, m.err} }

// diagnose explains a failed send when its error shows the collector
// speaking another protocol, and returns err unchanged otherwise. The
// transports' errors are matched by their text, pinned against real
// listeners in TestProtocolMismatch and against a real collector in
// tools/e2e/otelcol.sh. Where the text does not tell (net/http reports a
// gRPC server's greeting, when it comes before the request is written, as
// "readLoopPeekFailLocked"), the endpoint is asked once: that costs a
// connection for each failed request of that kind, on the sender's
// goroutine, bounded by a second.
func (e *Exporter) diagnose(err error) error {
	if d := diagnoseText(e.target, e.host, err); d != err {
		return d
	}
	s := err.Error()
	if e.target.Protocol == ProtocolHTTP && strings.HasPrefix(e.target.URL, "http:") &&
		(strings.Contains(s, "readLoopPeekFailLocked") || strings.Contains(s, "EOF") || strings.Contains(s, "connection reset")) &&
		speaksHTTP2(e.host, min(time.Second, e.timeout)) {
		return &mismatchError{grpcWhy(e.host), err}
	}
	return err
}

func grpcWhy(host string) string {
	return fmt.Sprintf("the collector at %s speaks gRPC, not OTLP/HTTP: use protocol %s for this port, or its OTLP/HTTP port (4318 by default)", host, ProtocolGRPC)
}

// diagnoseText explains err by its text alone.
func diagnoseText(t Target, host string, err error) error {
	s := err.Error()
	var why string
	switch {
	case t.Protocol == ProtocolHTTP && (strings.Contains(s, `malformed HTTP response "\x00\x00`) || strings.Contains(s, errHTTP2Greeting.Error())):
		// An HTTP/2 frame (a gRPC server's SETTINGS) where an HTTP/1.1
		// status line was due.
		why = grpcWhy(host)
	case t.Protocol == ProtocolGRPC && (strings.Contains(s, "looked like an HTTP/1.1 header") ||
		strings.Contains(s, "error reading server preface: http2: frame too large") ||
		strings.Contains(s, "received unexpected content-type")):
		// An HTTP/1.x status line where the HTTP/2 preface was due (read
		// as a frame header, its length is megabytes), or an HTTP/2
		// server that is not gRPC.
		why = fmt.Sprintf("the collector at %s speaks OTLP/HTTP, not gRPC: use protocol %s for this port, or its gRPC port (4317 by default)", host, ProtocolHTTP)
	case strings.Contains(s, "first record does not look like a TLS handshake") ||
		strings.Contains(s, "server gave HTTP response to HTTPS client"):
		why = fmt.Sprintf("the collector at %s does not speak TLS: use an http:// endpoint", host)
	default:
		return err
	}
	return &mismatchError{why, err}
}

// h2Preface is HTTP/2's client connection preface and an empty SETTINGS
// frame.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// speaksHTTP2 reports whether the server at host answers HTTP/2's
// cleartext preface with an HTTP/2 SETTINGS frame, as a gRPC server does
// (an HTTP/1 server answers with a status line), within d.
func speaksHTTP2(host string, d time.Duration) bool {
	conn, err := net.DialTimeout("tcp", host, d)
	if err != nil {
		return false
	}
	defer conn.Close()
	if conn.SetDeadline(time.Now().Add(d)) != nil {
		return false
	}
	if _, err := io.WriteString(conn, h2Preface); err != nil {
		return false
	}
	var frame [9]byte // length (3), type (1), flags, stream id
	if _, err := io.ReadFull(conn, frame[:]); err != nil {
		return false
	}
	return frame[3] == 0x04
}
