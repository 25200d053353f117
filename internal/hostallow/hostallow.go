// Package hostallow reads allow_hosts entries and classifies addresses, by
// one set of rules for everything that fetches a URL someone else chose:
// the builtin provider's http_fetch and the host's fetch of a media
// block's url, which enforce them, and the config loader, which reports a
// bad entry with its path when the config is checked. It lives apart from
// them so that none imports another.
package hostallow

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// Rule is one parsed allow_hosts entry of http_fetch.
type Rule struct {
	// host is the lower-case name without a trailing dot, an IP address in
	// its canonical form, or, for a wildcard, the suffix with its leading
	// dot (".example.com").
	Host     string
	Wildcard bool
	IP       bool
	// Prefix is the range of a CIDR entry, and invalid otherwise.
	Prefix netip.Prefix
	// Port is "" for the scheme's default port, or a port number.
	Port string
}

// Parse reads one allow_hosts entry, or says why it cannot be one.
func Parse(entry string) (Rule, error) {
	e := strings.ToLower(strings.TrimSpace(entry))
	switch {
	case e == "":
		return Rule{}, fmt.Errorf("empty entry: list host names such as \"api.example.com\"")
	case strings.Contains(e, "/") && !strings.Contains(e, "://") && !strings.ContainsAny(e, "?#@ \t\r\n\x00"):
		return parseCIDR(entry, e)
	case strings.Contains(e, "://") || strings.ContainsAny(e, "/?#@ \t\r\n\x00"):
		return Rule{}, fmt.Errorf("%q is not a host: list host names or address ranges only, such as \"api.example.com\", \"*.example.com\", \"intranet:8080\" or \"10.0.0.0/8\", not URLs", entry)
	case e == "*" || e == "*.":
		return Rule{}, fmt.Errorf("%q would allow every host, which defeats the allowlist: list the hosts a model may fetch from", entry)
	}
	host, port, hasPort := e, "", false
	switch {
	case strings.HasPrefix(e, "["):
		end := strings.Index(e, "]")
		if end < 0 {
			return Rule{}, fmt.Errorf("%q has an unclosed '['", entry)
		}
		host = e[1:end]
		if rest := e[end+1:]; rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return Rule{}, fmt.Errorf("%q: expected \":port\" after ']'", entry)
			}
			port, hasPort = p, true
		}
		if _, err := netip.ParseAddr(host); err != nil {
			return Rule{}, fmt.Errorf("%q: only an IPv6 address may be written in brackets", entry)
		}
	case strings.Count(e, ":") == 1:
		host, port, hasPort = strings.Cut(e, ":")
	}
	r := Rule{}
	if hasPort {
		p, err := ParsePort(port)
		if err != nil {
			return Rule{}, fmt.Errorf("%q: %v", entry, err)
		}
		r.Port = p
	}
	host = strings.TrimSuffix(host, ".")
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Unmap().IsUnspecified() {
			return Rule{}, fmt.Errorf("%q is the unspecified address, which means this machine: to let http_fetch reach a server here, allow its loopback address as a CIDR, such as \"127.0.0.1/32:8080\"", entry)
		}
		if what, _ := Classify(addr); what != "" {
			return Rule{}, fmt.Errorf("%q is %s: http_fetch refuses such addresses unless allow_hosts lists their range in CIDR form; to allow this address only, write %q", entry, what, CIDRAdvice(addr, r.Port))
		}
		r.Host, r.IP = addr.String(), true
		return r, nil
	}
	if suffix, ok := strings.CutPrefix(host, "*."); ok {
		if !strings.Contains(suffix, ".") {
			return Rule{}, fmt.Errorf("%q is too broad: a wildcard must name a domain with at least two labels, such as \"*.example.com\"", entry)
		}
		if err := checkHostName(suffix); err != nil {
			return Rule{}, fmt.Errorf("%q: %v", entry, err)
		}
		if err := checkNotPublicSuffix(suffix); err != nil {
			return Rule{}, fmt.Errorf("%q is too broad: %v", entry, err)
		}
		r.Host, r.Wildcard = "."+suffix, true
		return r, nil
	}
	if err := checkHostName(host); err != nil {
		return Rule{}, fmt.Errorf("%q: %v", entry, err)
	}
	r.Host = host
	return r, nil
}

// parseCIDR parses a CIDR entry: "10.0.0.0/8", "10.0.0.0/8:8080",
// "fd00::/8" or "[fd00::/8]:8080". e is entry, trimmed and lower-cased.
func parseCIDR(entry, e string) (Rule, error) {
	cidr, port, hasPort := e, "", false
	if inner, ok := strings.CutPrefix(e, "["); ok {
		end := strings.Index(inner, "]")
		if end < 0 {
			return Rule{}, fmt.Errorf("%q has an unclosed '['", entry)
		}
		cidr = inner[:end]
		if rest := inner[end+1:]; rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return Rule{}, fmt.Errorf("%q: expected \":port\" after ']'", entry)
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
		return Rule{}, fmt.Errorf("%q is not a host or a CIDR: list host names such as \"api.example.com\", or address ranges such as \"10.0.0.0/8\" or \"127.0.0.1/32:8080\", not URLs or paths", entry)
	}
	r := Rule{Prefix: prefix}
	if hasPort {
		if r.Port, err = ParsePort(port); err != nil {
			return Rule{}, fmt.Errorf("%q: %v", entry, err)
		}
	}
	addr := prefix.Addr()
	switch {
	case addr.Zone() != "":
		return Rule{}, fmt.Errorf("%q: a CIDR entry cannot carry an IPv6 zone", entry)
	case addr.Is4In6():
		return Rule{}, fmt.Errorf("%q: write an IPv4 range in IPv4 form, such as \"10.0.0.0/8\"; IPv4-mapped IPv6 addresses are matched as the IPv4 address they carry", entry)
	case prefix != prefix.Masked():
		return Rule{}, fmt.Errorf("%q has address bits set beyond its prefix length: write %q", entry, prefix.Masked().String())
	case prefix.Bits() < 8:
		return Rule{}, fmt.Errorf("%q is too broad: a CIDR entry must be /8 or narrower", entry)
	case prefix.Contains(netip.IPv4Unspecified()) || prefix.Contains(netip.IPv6Unspecified()):
		return Rule{}, fmt.Errorf("%q contains the unspecified address (0.0.0.0 or ::), which means this machine: allow the loopback address instead, such as \"127.0.0.1/32:8080\"", entry)
	}
	return r, nil
}

// CIDRAdvice is the CIDR entry that allows only addr (and port, if given).
func CIDRAdvice(addr netip.Addr, port string) string {
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

func ParsePort(p string) (string, error) {
	if p == "" || len(p) > 5 || strings.TrimLeft(p, "0123456789") != "" {
		return "", fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	n, _ := strconv.Atoi(p)
	if n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	return strconv.Itoa(n), nil
}

func DefaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// forbiddenRanges are the special-purpose ranges (IANA's IPv4 and IPv6
// special-purpose address registries) that net/netip's predicates do not
// already cover, with what to call them in a message.
var forbiddenRanges = []struct {
	Prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT (shared) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved or broadcast address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible IPv6 address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo tunnel address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
}

// metadataAddrs are cloud instance metadata, credential and platform
// services. A CIDR that merely contains one of them does not open it: only
// an entry naming that single address does ("169.254.169.254/32"), since
// the credentials they hand out are the host's, not the model's.
var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true, // AWS, Azure, GCP, OpenStack, DigitalOcean, ...
	netip.MustParseAddr("169.254.169.253"): true, // AWS DNS
	netip.MustParseAddr("169.254.169.123"): true, // AWS time
	netip.MustParseAddr("169.254.170.2"):   true, // AWS ECS task credentials
	netip.MustParseAddr("169.254.170.23"):  true, // AWS EKS pod identity
	netip.MustParseAddr("169.254.0.23"):    true, // Tencent Cloud
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"):   true, // Azure wire server (a public address)
	netip.MustParseAddr("192.0.0.192"):     true, // Oracle Cloud (legacy)
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS over IPv6
	netip.MustParseAddr("fd00:ec2::253"):   true, // AWS DNS over IPv6
	netip.MustParseAddr("fd00:ec2::23"):    true, // AWS EKS pod identity over IPv6
	netip.MustParseAddr("fd00:ec2::123"):   true, // AWS time over IPv6
	netip.MustParseAddr("fd20:ce::254"):    true, // GCP over IPv6
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// embeddedIPv4 returns the IPv4 address an IPv6 address carries and reaches
// through a translator or tunnel: the well-known NAT64 prefix (RFC 6052)
// and 6to4 (RFC 3056). IPv4-mapped addresses are unmapped by the caller.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case nat64Prefix.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// Classify says what kind of address ip is when http_fetch must not
// connect to it by default ("a loopback address"), or "" for a public
// unicast address. metadata reports a cloud metadata address, which only an
// allow_hosts entry naming that very address opens. ip is unmapped and its
// zone dropped first, and the IPv4 address inside a NAT64 or 6to4 address
// is judged too, so no spelling of a forbidden address passes.
func Classify(ip netip.Addr) (what string, metadata bool) {
	ip = ip.Unmap().WithZone("")
	if v4, ok := embeddedIPv4(ip); ok {
		if what, metadata := Classify(v4); what != "" {
			return what + " (" + v4.String() + ", inside " + ip.String() + ")", metadata
		}
		return "", false
	}
	switch {
	case !ip.IsValid():
		return "an invalid address", false
	case metadataAddrs[ip]:
		return "a cloud metadata service address", true
	case ip.IsUnspecified():
		return "the unspecified address, which means this machine", false
	case ip.IsLoopback():
		return "a loopback address (this machine)", false
	case ip.IsPrivate():
		return "a private network address", false
	case ip.IsLinkLocalUnicast():
		return "a link-local address", false
	case ip.IsMulticast():
		return "a multicast address", false
	}
	for _, r := range forbiddenRanges {
		if r.Prefix.Contains(ip) {
			return r.what, false
		}
	}
	return "", false
}

// Check reports why entry cannot be an allow_hosts entry, or nil.
func Check(entry string) error {
	_, err := Parse(entry)
	return err
}

// RefuseAddr says why a connection to ap may not be made under rules (the
// parsed allow_hosts), or returns "" when it may: a public unicast address
// passes; any other passes only when a CIDR rule contains it and allows its
// port (a cloud metadata address only when the rule is that single
// address). It is the one address rule of every fetch the host makes for
// someone else (http_fetch, a media block's url), applied at dial time to
// the address actually reached.
func RefuseAddr(rules []Rule, ap netip.AddrPort) string {
	ip := ap.Addr().Unmap().WithZone("")
	what, metadata := Classify(ip)
	if what == "" {
		return ""
	}
	port := strconv.Itoa(int(ap.Port()))
	for _, r := range rules {
		if !r.Prefix.IsValid() || !r.Prefix.Contains(ip) {
			continue
		}
		if metadata && (!r.Prefix.IsSingleIP() || r.Prefix.Addr() != ip) {
			continue
		}
		if r.Port == port || (r.Port == "" && (port == "80" || port == "443")) {
			return ""
		}
	}
	return what
}

// MatchURL reports whether the host of u (an http or https URL with a host),
// as written, matches a rule with its port: a name entry, a public IP
// address entry, or, for an address literal, a CIDR entry. listed reports
// that some rule names the host for other ports only; port is the port the
// URL reaches. err is a port that is not a number.
func MatchURL(rules []Rule, u *url.URL) (match, listed bool, port string, err error) {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	isIP := false
	if addr, err := netip.ParseAddr(host); err == nil {
		host, isIP = addr.String(), true
	}
	def := DefaultPort(u.Scheme)
	port = def
	if p := u.Port(); p != "" {
		np, err := ParsePort(p)
		if err != nil {
			return false, false, "", fmt.Errorf("the URL's %v", err)
		}
		port = np
	}
	for _, r := range rules {
		var m bool
		switch {
		case r.Prefix.IsValid():
			// An address literal in the range, as written: an IPv4-mapped
			// literal does not match an IPv4 range.
			addr, err := netip.ParseAddr(host)
			m = isIP && err == nil && r.Prefix.Contains(addr)
		case r.IP != isIP:
			continue
		case r.Wildcard:
			m = strings.HasSuffix(host, r.Host) && len(host) > len(r.Host)
		default:
			m = r.Host == host
		}
		if !m {
			continue
		}
		if r.Port == port || (r.Port == "" && port == def) {
			return true, listed, port, nil
		}
		listed = true
	}
	return false, listed, port, nil
}
