package builtin

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// hostRule is one parsed allow_hosts entry.
type hostRule struct {
	// host is the lower-case name without a trailing dot, an IP address in
	// its canonical form, or, for a wildcard, the suffix with its leading
	// dot (".example.com").
	host     string
	wildcard bool
	ip       bool
	// prefix is the range of a CIDR entry, and invalid otherwise.
	prefix netip.Prefix
	// port is "" for the scheme's default port, or a port number.
	port string
}

// allowlist is http_fetch's allow_hosts, parsed. It judges a fetch twice.
// First the URL: its host, as written, must match a name entry, a public IP
// address entry, or (for an address literal) a CIDR entry, with the port.
// Then every connection: the address a name resolved to must be a public
// unicast address, or lie in a CIDR entry that allows its port (see
// checkAddr). So a name entry says which URLs a model may ask for, and a
// CIDR entry says which non-public addresses may be reached at all.
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
	case strings.Contains(e, "/") && !strings.Contains(e, "://") && !strings.ContainsAny(e, "?#@ \t\r\n\x00"):
		return parseCIDRRule(entry, e)
	case strings.Contains(e, "://") || strings.ContainsAny(e, "/?#@ \t\r\n\x00"):
		return hostRule{}, fmt.Errorf("%q is not a host: list host names or address ranges only, such as \"api.example.com\", \"*.example.com\", \"intranet:8080\" or \"10.0.0.0/8\", not URLs", entry)
	case e == "*" || e == "*.":
		return hostRule{}, fmt.Errorf("%q would allow every host, which defeats the allowlist: list the hosts a model may fetch from", entry)
	}
	host, port, hasPort := e, "", false
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
			port, hasPort = p, true
		}
		if _, err := netip.ParseAddr(host); err != nil {
			return hostRule{}, fmt.Errorf("%q: only an IPv6 address may be written in brackets", entry)
		}
	case strings.Count(e, ":") == 1:
		host, port, hasPort = strings.Cut(e, ":")
	}
	r := hostRule{}
	if hasPort {
		p, err := parsePort(port)
		if err != nil {
			return hostRule{}, fmt.Errorf("%q: %v", entry, err)
		}
		r.port = p
	}
	host = strings.TrimSuffix(host, ".")
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Unmap().IsUnspecified() {
			return hostRule{}, fmt.Errorf("%q is the unspecified address, which means this machine: to let http_fetch reach a server here, allow its loopback address as a CIDR, such as \"127.0.0.1/32:8080\"", entry)
		}
		if what, _ := classifyAddr(addr); what != "" {
			return hostRule{}, fmt.Errorf("%q is %s: http_fetch refuses such addresses unless allow_hosts lists their range in CIDR form; to allow this address only, write %q", entry, what, cidrAdvice(addr, r.port))
		}
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
		if err := checkNotPublicSuffix(suffix); err != nil {
			return hostRule{}, fmt.Errorf("%q is too broad: %v", entry, err)
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

// parseCIDRRule parses a CIDR entry: "10.0.0.0/8", "10.0.0.0/8:8080",
// "fd00::/8" or "[fd00::/8]:8080". e is entry, trimmed and lower-cased.
func parseCIDRRule(entry, e string) (hostRule, error) {
	cidr, port, hasPort := e, "", false
	if inner, ok := strings.CutPrefix(e, "["); ok {
		end := strings.Index(inner, "]")
		if end < 0 {
			return hostRule{}, fmt.Errorf("%q has an unclosed '['", entry)
		}
		cidr = inner[:end]
		if rest := inner[end+1:]; rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return hostRule{}, fmt.Errorf("%q: expected \":port\" after ']'", entry)
			}
			port, hasPort = p, true
		}
	} else {
		slash := strings.IndexByte(e, '/')
		if bits, p, ok := strings.Cut(e[slash+1:], ":"); ok {
			cidr, port, hasPort = e[:slash+1]+bits, p, true
		}
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return hostRule{}, fmt.Errorf("%q is not a host or a CIDR: list host names such as \"api.example.com\", or address ranges such as \"10.0.0.0/8\" or \"127.0.0.1/32:8080\", not URLs or paths", entry)
	}
	r := hostRule{prefix: prefix}
	if hasPort {
		if r.port, err = parsePort(port); err != nil {
			return hostRule{}, fmt.Errorf("%q: %v", entry, err)
		}
	}
	addr := prefix.Addr()
	switch {
	case addr.Zone() != "":
		return hostRule{}, fmt.Errorf("%q: a CIDR entry cannot carry an IPv6 zone", entry)
	case addr.Is4In6():
		return hostRule{}, fmt.Errorf("%q: write an IPv4 range in IPv4 form, such as \"10.0.0.0/8\"; IPv4-mapped IPv6 addresses are matched as the IPv4 address they carry", entry)
	case prefix != prefix.Masked():
		return hostRule{}, fmt.Errorf("%q has address bits set beyond its prefix length: write %q", entry, prefix.Masked().String())
	case prefix.Bits() < 8:
		return hostRule{}, fmt.Errorf("%q is too broad: a CIDR entry must be /8 or narrower", entry)
	case prefix.Contains(netip.IPv4Unspecified()) || prefix.Contains(netip.IPv6Unspecified()):
		return hostRule{}, fmt.Errorf("%q contains the unspecified address (0.0.0.0 or ::), which means this machine: allow the loopback address instead, such as \"127.0.0.1/32:8080\"", entry)
	}
	return r, nil
}

// cidrAdvice is the CIDR entry that allows only addr (and port, if given).
func cidrAdvice(addr netip.Addr, port string) string {
	addr = addr.Unmap().WithZone("")
	s := netip.PrefixFrom(addr, addr.BitLen()).String()
	switch {
	case port == "":
		return s
	case addr.Is6():
		return "[" + s + "]:" + port
	}
	return s + ":" + port
}

// checkNotPublicSuffix refuses a wildcard's domain that is a public suffix
// ("co.uk", "github.io"): the names below it belong to unrelated owners.
func checkNotPublicSuffix(domain string) error {
	ascii, err := idna.Lookup.ToASCII(domain)
	if err != nil {
		return fmt.Errorf("%q is not a valid international domain name: %v", domain, err)
	}
	if ps, icann := publicsuffix.PublicSuffix(ascii); ps == ascii {
		kind := "a public suffix"
		if !icann {
			kind = "a public suffix run by a hosting provider"
		}
		return fmt.Errorf("%q is %s, under which unrelated owners register their own domains: list the domains you mean, such as \"*.example.%s\"", domain, kind, domain)
	}
	return nil
}

// checkHostName accepts what may appear as a host name in a URL: labels of
// letters, digits, '-' and '_' (and non-ASCII letters of an international
// name), separated by single dots.
//
// It refuses names that always mean this machine ("localhost" and names
// below it, RFC 6761), and names whose last label is a number, which some
// resolvers read as an IPv4 address ("127.1", "0x7f.1").
func checkHostName(h string) error {
	if h == "" || len(h) > 253 {
		return fmt.Errorf("a host name must be 1 to 253 characters long")
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "localhost.localdomain" {
		return fmt.Errorf("%q always means this machine: to let http_fetch reach a server here, allow its address as a CIDR, such as \"127.0.0.1/32:8080\", and fetch http://127.0.0.1:8080/", h)
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") && strings.Trim(last[2:], "0123456789abcdef") == "" {
		return fmt.Errorf("%q is neither a host name nor an IP address in canonical form: write IPv4 addresses as four decimal numbers, such as \"203.0.113.7\"", h)
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
		var match bool
		switch {
		case r.prefix.IsValid():
			// An address literal in the range, as written: an IPv4-mapped
			// literal does not match an IPv4 range.
			addr, err := netip.ParseAddr(host)
			match = isIP && err == nil && r.prefix.Contains(addr)
		case r.ip != isIP:
			continue
		case r.wildcard:
			match = strings.HasSuffix(host, r.host) && len(host) > len(r.host)
		default:
			match = r.host == host
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
