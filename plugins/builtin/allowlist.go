package builtin

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// hostRule is one parsed allow_hosts entry.
type hostRule struct {
	// host is the lower-case name without a trailing dot, an IP address in
	// its canonical form, or, for a wildcard, the suffix with its leading
	// dot (".example.com").
	host     string
	wildcard bool
	ip       bool
	// port is "" for the scheme's default port, or a port number.
	port string
}

// allowlist is http_fetch's allow_hosts, parsed. It matches host names as
// written in the URL and never resolves them: what is allowed is a name,
// whatever addresses DNS gives it.
type allowlist struct {
	rules   []hostRule
	entries []string // as configured, for messages
}

// parseAllowlist parses every entry and reports every bad one.
func parseAllowlist(entries []string) (allowlist, []string) {
	var (
		a        = allowlist{entries: entries}
		problems []string
	)
	for i, e := range entries {
		r, err := parseHostRule(e)
		if err != nil {
			problems = append(problems, fmt.Sprintf("http_fetch.allow_hosts[%d]: %v", i, err))
			continue
		}
		a.rules = append(a.rules, r)
	}
	return a, problems
}

// CheckAllowHost reports why entry cannot be an http_fetch allow_hosts
// entry, or nil. The config loader calls it so that a bad entry is found
// when the config is checked, with its path, by the rules the tool applies.
func CheckAllowHost(entry string) error {
	_, err := parseHostRule(entry)
	return err
}

func parseHostRule(entry string) (hostRule, error) {
	e := strings.ToLower(strings.TrimSpace(entry))
	switch {
	case e == "":
		return hostRule{}, fmt.Errorf("empty entry: list host names such as \"api.example.com\"")
	case strings.Contains(e, "://") || strings.ContainsAny(e, "/?#@ \t\r\n\x00"):
		return hostRule{}, fmt.Errorf("%q is not a host: list host names only, such as \"api.example.com\", \"*.example.com\" or \"localhost:8080\", not URLs", entry)
	case e == "*" || e == "*.":
		return hostRule{}, fmt.Errorf("%q would allow every host, which defeats the allowlist: list the hosts a model may fetch from", entry)
	}
	host, port := e, ""
	switch {
	case strings.HasPrefix(e, "["):
		end := strings.Index(e, "]")
		if end < 0 {
			return hostRule{}, fmt.Errorf("%q has an unclosed '['", entry)
		}
		host = e[1:end]
		if rest := e[end+1:]; rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return hostRule{}, fmt.Errorf("%q: expected \":port\" after ']'", entry)
			}
			port = p
		}
		if _, err := netip.ParseAddr(host); err != nil {
			return hostRule{}, fmt.Errorf("%q: only an IPv6 address may be written in brackets", entry)
		}
	case strings.Count(e, ":") == 1:
		host, port, _ = strings.Cut(e, ":")
	}
	r := hostRule{}
	if port != "" || strings.HasSuffix(e, ":") {
		p, err := parsePort(port)
		if err != nil {
			return hostRule{}, fmt.Errorf("%q: %v", entry, err)
		}
		r.port = p
	}
	host = strings.TrimSuffix(host, ".")
	if addr, err := netip.ParseAddr(host); err == nil {
		r.host, r.ip = addr.String(), true
		return r, nil
	}
	if suffix, ok := strings.CutPrefix(host, "*."); ok {
		if !strings.Contains(suffix, ".") {
			return hostRule{}, fmt.Errorf("%q is too broad: a wildcard must name a domain with at least two labels, such as \"*.example.com\"", entry)
		}
		if err := checkHostName(suffix); err != nil {
			return hostRule{}, fmt.Errorf("%q: %v", entry, err)
		}
		r.host, r.wildcard = "."+suffix, true
		return r, nil
	}
	if err := checkHostName(host); err != nil {
		return hostRule{}, fmt.Errorf("%q: %v", entry, err)
	}
	r.host = host
	return r, nil
}

// checkHostName accepts what may appear as a host name in a URL: labels of
// letters, digits, '-' and '_' (and non-ASCII letters of an international
// name), separated by single dots.
func checkHostName(h string) error {
	if h == "" || len(h) > 253 {
		return fmt.Errorf("a host name must be 1 to 253 characters long")
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" {
			return fmt.Errorf("empty label in host name %q", h)
		}
		for _, c := range label {
			switch {
			case c == '*':
				return fmt.Errorf("'*' may only start an entry, as in \"*.example.com\"")
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c >= 0x80:
			default:
				return fmt.Errorf("character %q is not allowed in a host name", c)
			}
		}
	}
	return nil
}

func parsePort(p string) (string, error) {
	if p == "" || len(p) > 5 || strings.TrimLeft(p, "0123456789") != "" {
		return "", fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	n, _ := strconv.Atoi(p)
	if n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	return strconv.Itoa(n), nil
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// check says why u may not be fetched, or returns nil. It expects an http
// or https URL with a host.
func (a allowlist) check(u *url.URL) error {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	isIP := false
	if addr, err := netip.ParseAddr(host); err == nil {
		host, isIP = addr.String(), true
	}
	def := defaultPort(u.Scheme)
	port := def
	if p := u.Port(); p != "" {
		np, err := parsePort(p)
		if err != nil {
			return fmt.Errorf("the URL's %v", err)
		}
		port = np
	}
	hostListed := false
	for _, r := range a.rules {
		if r.ip != isIP {
			continue
		}
		match := r.host == host
		if r.wildcard {
			match = strings.HasSuffix(host, r.host) && len(host) > len(r.host)
		}
		if !match {
			continue
		}
		if r.port == port || (r.port == "" && port == def) {
			return nil
		}
		hostListed = true
	}
	display := u.Hostname()
	if hostListed {
		return fmt.Errorf("port %s of host %q is not allowed: allow_hosts lists the host for other ports only (an entry without a port means the default port, 80 for http and 443 for https); fetch from an allowed port, or ask the user to add %q to allow_hosts", port, display, u.Host)
	}
	return fmt.Errorf("host %q is not allowed: http_fetch may only fetch from %s; if the user needs this host, they must add it to allow_hosts", display, a.describe())
}

// describe lists the allowed hosts for messages and the tool's description.
func (a allowlist) describe() string {
	const max = 20
	list := a.entries
	more := 0
	if len(list) > max {
		list, more = list[:max], len(list)-max
	}
	s := strings.Join(list, ", ")
	if more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}
