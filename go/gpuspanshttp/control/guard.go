package control

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Exposure (the package doc says the rules): who may reach the endpoints.

// CheckListen reports whether serving the endpoints on addr is allowed: a
// loopback address always is, any other only with a token. addr is the
// bound address (net.Listener.Addr), so "localhost" and ":0" have been
// resolved to the address actually used.
func CheckListen(addr net.Addr, token string) error {
	if err := CheckToken(token); err != nil {
		return err
	}
	if token != "" {
		return nil
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("control: %v is not a loopback address: other hosts could change the telemetry level; set a token (Options.Token) or listen on 127.0.0.1", addr)
}

// CheckToken reports whether token can serve as a bearer token: "" (none),
// or printable text without white space. A blank token, or one with white
// space or a control character, could never match what a client sends
// (the header's value is trimmed, and cannot hold a control character),
// yet would pass for a token at CheckListen.
func CheckToken(token string) error {
	if token == "" {
		return nil
	}
	if strings.TrimSpace(token) == "" {
		return errors.New("control: the token is blank")
	}
	if !utf8.ValidString(token) {
		return errors.New("control: the token is not valid UTF-8")
	}
	for _, r := range token {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("control: the token has white space or a control character (%U): no bearer header could carry it", r)
		}
	}
	return nil
}

// Protect returns h behind the same bearer token check as the endpoints:
// 401 without a token, 403 with a wrong one, both before h sees the
// request. With token "" it returns h. A serving binary uses it for the
// pages it serves next to the endpoints (/metrics, the live page) when it
// wants them private too. Check the token with CheckToken first.
func Protect(h http.Handler, token string) http.Handler {
	if token == "" {
		return h
	}
	sum := sha256.Sum256([]byte(token))
	a := &api{tokenSum: sum[:]}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.authorize(r); err != nil {
			a.fail(w, wantsJSON(r), err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// RefuseCrossSite returns h behind the checks the endpoints make when no
// token is set (see the package documentation): requests a web page of
// another site could make are answered 403 (415 for a form's POST) before
// h sees them. With a token it returns h, which should check the token.
func RefuseCrossSite(h http.Handler, token string) http.Handler {
	if token != "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := crossSite(r); err != nil {
			(&api{}).fail(w, wantsJSON(r), err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// crossSite returns why r may come from a web page of another site, or nil.
func crossSite(r *http.Request) error {
	if r.Host != "" && !loopbackHost(r.Host) {
		return &httpError{http.StatusForbidden, fmt.Sprintf("Host %q is not a loopback address or localhost: with no token set, only requests to this machine by its loopback name are served (a page of another site reaching it through DNS rebinding is not)", truncate(r.Host))}
	}
	if o, ok := r.Header["Origin"]; ok {
		if len(o) != 1 || !sameOrigin(o[0], r.Host) {
			return &httpError{http.StatusForbidden, fmt.Sprintf("Origin %q is not this server's: with no token set, cross-site requests are refused", truncate(strings.Join(o, ", ")))}
		}
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return &httpError{http.StatusForbidden, fmt.Sprintf("Sec-Fetch-Site is %q: with no token set, cross-site requests are refused", truncate(site))}
	}
	if r.Method == http.MethodPost && formContentType(r.Header.Get("Content-Type")) {
		return &httpError{http.StatusUnsupportedMediaType, "a POST with no Content-Type or a form's (text/plain, application/x-www-form-urlencoded, multipart/form-data) could come from another site's page: send PUT, or POST with Content-Type: application/json"}
	}
	return nil
}

// loopbackHost reports whether a Host header names this machine by a name
// no DNS answer can change: a loopback IP, localhost, or a name under
// .localhost.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// sameOrigin reports whether an Origin header names the origin served at
// host (the request's Host header).
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null", or not an origin
	}
	if host == "" {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// formContentType reports whether a request's Content-Type is one a form,
// or a fetch needing no CORS preflight, can send.
func formContentType(contentType string) bool {
	if strings.TrimSpace(contentType) == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return true // unparsable: a browser sends it as it is
	}
	switch mt {
	case "application/x-www-form-urlencoded", "multipart/form-data", "text/plain":
		return true
	}
	return false
}
