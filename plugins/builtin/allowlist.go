package builtin

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/tenxgraph/tenxgraph/internal/hostallow"
)

// hostRule is one parsed allow_hosts entry.
type hostRule = hostallow.Rule

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

// The entry rules and the address classes live in internal/hostallow,
// shared with the config loader.
var (
	parseHostRule = hostallow.Parse
	defaultPort   = hostallow.DefaultPort
	classifyAddr  = hostallow.Classify
)

// check says why u may not be fetched, or returns nil. It expects an http
// or https URL with a host.
func (a allowlist) check(u *url.URL) error {
	match, hostListed, port, err := hostallow.MatchURL(a.rules, u)
	switch {
	case err != nil:
		return err
	case match:
		return nil
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
