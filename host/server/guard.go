package server

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// The checks every request passes before any route sees it. A browser lets
// any page send some requests to any address, 127.0.0.1 included: a POST
// whose Content-Type is text/plain goes out cross-site with no preflight,
// and a page that rebinds its own DNS name to 127.0.0.1 is then same-origin
// with the server. Auth does not help when it is off (the default), so these
// hold with and without it:
//
//   - On a loopback connection, the Host must be a loopback name
//     (localhost, 127.0.0.1, [::1]) or one of server.allowed_hosts: a
//     rebound page sends its own name.
//   - An Origin must be the server's own or one of server.cors.allow_origins.
//   - A POST body must be application/json, which a page can send to another
//     origin only after a preflight that the CORS list answers.

// guard refuses a request whose Host or Origin is not the server's (403)
// before it reaches a route. A refused request changes nothing.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg, ok := s.hostAllowed(r); !ok {
			writeError(w, http.StatusForbidden, "host_not_allowed", msg, nil)
			return
		}
		if msg, ok := s.originAllowed(r); !ok {
			writeError(w, http.StatusForbidden, "origin_not_allowed", msg, nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed checks r's Host. On a connection that arrived on a loopback
// address (and for a request that came some other way than through a
// listener), only loopback names and server.allowed_hosts are served. On
// another address, the Host is checked only when server.allowed_hosts is
// set, and then IP addresses (which no page can rebind) are served too.
func (s *Server) hostAllowed(r *http.Request) (string, bool) {
	local := true
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		local = isLoopbackAddr(a.String())
	}
	if !local && len(s.cfg.AllowedHosts) == 0 {
		return "", true
	}
	name := hostName(r.Host)
	ip := net.ParseIP(name)
	switch {
	case name == "localhost" || ip != nil && ip.IsLoopback():
		return "", true
	case ip != nil && !local:
		return "", true
	case slices.Contains(s.cfg.AllowedHosts, name):
		return "", true
	}
	return fmt.Sprintf("Host %q is not served: this server answers to localhost, 127.0.0.1 and [::1]%s; "+
		"add the name to server.allowed_hosts if you reach it by that name", r.Host, listed(s.cfg.AllowedHosts)), false
}

// originAllowed checks r's Origin, which browsers send on every cross-origin
// request and on same-origin POSTs: it must be the origin of the server
// itself (scheme and the request's Host) or be listed in
// server.cors.allow_origins. Requests with no Origin (curl, servers, the CLI)
// pass.
func (s *Server) originAllowed(r *http.Request) (string, bool) {
	origin := r.Header.Get("Origin")
	if origin == "" || slices.Contains(s.cfg.CORS.AllowOrigins, "*") || slices.Contains(s.cfg.CORS.AllowOrigins, origin) {
		return "", true
	}
	if u, err := url.Parse(origin); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Path == "" &&
		(strings.EqualFold(u.Host, r.Host) || strings.EqualFold(withoutDefaultPort(u), r.Host)) {
		return "", true
	}
	return fmt.Sprintf("Origin %q may not call this server: list it in server.cors.allow_origins to let pages from it in", origin), false
}

// jsonBody refuses a POST whose Content-Type is not application/json (415):
// a browser sends text/plain, form and multipart bodies to any origin without
// asking, but JSON only after a CORS preflight. A charset parameter must say
// UTF-8, which JSON is.
func jsonBody(r *http.Request) (string, bool) {
	if r.Method != http.MethodPost {
		return "", true
	}
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case ct == "":
		return "send the body with Content-Type: application/json", false
	case err != nil || mt != "application/json":
		return fmt.Sprintf("Content-Type %q is not accepted: send the body as JSON with Content-Type: application/json", ct), false
	case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
		return fmt.Sprintf("Content-Type %q: JSON bodies are UTF-8; send charset=utf-8 or no charset", ct), false
	}
	return "", true
}

// hostName is the lower-case name of a Host header, without its port,
// brackets or a trailing dot.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// isLoopbackAddr reports whether a host:port (or a bare host) is a loopback
// address or the name localhost.
func isLoopbackAddr(addr string) bool {
	name := hostName(addr)
	ip := net.ParseIP(name)
	return name == "localhost" || ip != nil && ip.IsLoopback()
}

// withoutDefaultPort is u's host:port with the scheme's default port left
// out, as a Host header carries it.
func withoutDefaultPort(u *url.URL) string {
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		return strings.TrimSuffix(u.Host, ":"+p)
	}
	return u.Host
}

func listed(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return " and the names in server.allowed_hosts (" + strings.Join(names, ", ") + ")"
}
