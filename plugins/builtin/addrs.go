package builtin

import (
	"fmt"
	"net/netip"
	"syscall"

	"github.com/tenxgraph/tenxgraph/internal/hostallow"
)

// Addresses http_fetch does not connect to unless allow_hosts names their
// range as a CIDR: everything that is not a public unicast address, so that
// a model cannot reach the host's own services, its private network or a
// cloud's metadata service through a name that resolves there, a redirect,
// or an address literal.

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
	if what := hostallow.RefuseAddr(a.rules, ap); what != "" {
		return &addrError{addr: netip.AddrPortFrom(ap.Addr().WithZone(""), ap.Port()), what: what}
	}
	return nil
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
