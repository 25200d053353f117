package builtin

import (
	"fmt"
	"net/netip"
	"strconv"
	"syscall"
)

// Addresses http_fetch does not connect to unless allow_hosts names their
// range as a CIDR: everything that is not a public unicast address, so that
// a model cannot reach the host's own services, its private network or a
// cloud's metadata service through a name that resolves there, a redirect,
// or an address literal.

// forbiddenRanges are the special-purpose ranges (IANA's IPv4 and IPv6
// special-purpose address registries) that net/netip's predicates do not
// already cover, with what to call them in a message.
var forbiddenRanges = []struct {
	prefix netip.Prefix
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

// classifyAddr says what kind of address ip is when http_fetch must not
// connect to it by default ("a loopback address"), or "" for a public
// unicast address. metadata reports a cloud metadata address, which only an
// allow_hosts entry naming that very address opens. ip is unmapped and its
// zone dropped first, and the IPv4 address inside a NAT64 or 6to4 address
// is judged too, so no spelling of a forbidden address passes.
func classifyAddr(ip netip.Addr) (what string, metadata bool) {
	ip = ip.Unmap().WithZone("")
	if v4, ok := embeddedIPv4(ip); ok {
		if what, metadata := classifyAddr(v4); what != "" {
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
		if r.prefix.Contains(ip) {
			return r.what, false
		}
	}
	return "", false
}

// addrError is a connection http_fetch refused because of the address it
// would reach.
type addrError struct {
	addr netip.AddrPort
	what string
}

func (e *addrError) Error() string {
	return fmt.Sprintf("address %s is %s, which http_fetch does not connect to: it only reaches such addresses when the user lists their range as a CIDR in allow_hosts; fetch a public host instead", e.addr, e.what)
}

// checkAddr says why http_fetch may not connect to ap, or returns nil. A
// public unicast address passes; any other passes only when a CIDR entry
// contains it and allows its port (a cloud metadata address only when the
// entry is that single address).
func (a allowlist) checkAddr(ap netip.AddrPort) error {
	ip := ap.Addr().Unmap().WithZone("")
	what, metadata := classifyAddr(ip)
	if what == "" {
		return nil
	}
	port := strconv.Itoa(int(ap.Port()))
	for _, r := range a.rules {
		if !r.prefix.IsValid() || !r.prefix.Contains(ip) {
			continue
		}
		if metadata && (!r.prefix.IsSingleIP() || r.prefix.Addr() != ip) {
			continue
		}
		if r.port == port || (r.port == "" && (port == "80" || port == "443")) {
			return nil
		}
	}
	return &addrError{addr: netip.AddrPortFrom(ap.Addr().WithZone(""), ap.Port()), what: what}
}

// dialControl is the net.Dialer Control hook: it runs once the address of a
// connection is known (after DNS, for every address tried, on the first
// request and on every redirect) and before the connection is made, so what
// is checked is what is reached.
func (a allowlist) dialControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("http_fetch refused to connect to %q (%s): not an IP address and port", address, network)
	}
	return a.checkAddr(ap)
}
