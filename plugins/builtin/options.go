package builtin

import "github.com/tenxgraph/tenxgraph/sdk"

// Options chooses the builtin tools a graph gets and configures the ones that
// reach outside the process. It is a plain struct so the config file maps
// onto it one to one, and it travels to a plugin subprocess as JSON, sent with Configure:
//
//	{
//	  "enable": ["http_fetch", "read_file"],
//	  "http_fetch": {"allow_hosts": ["api.example.com", "*.example.org", "127.0.0.1/32:8080"],
//	                 "max_bytes": 1048576, "timeout": "10s"},
//	  "workspace_root": "/srv/agent/workspace"
//	}
type Options struct {
	// Enable lists the tools to serve by name. Empty means DefaultTools():
	// the tools without side effects, which are safe to offer to any model.
	Enable []string `json:"enable,omitempty"`
	// HTTPFetch configures http_fetch when it is enabled; it is ignored
	// otherwise.
	HTTPFetch HTTPFetchOptions `json:"http_fetch,omitzero"`
	// WorkspaceRoot is the only folder the file tools (read_file, write_file,
	// list_files) may touch; they refuse every path outside it. It is
	// required, and must be an existing directory, when any of them is
	// enabled. A relative root is made absolute when New runs, against the
	// current directory of the process calling it.
	WorkspaceRoot string `json:"workspace_root,omitempty"`
}

// HTTPFetchOptions bounds what http_fetch may reach and how much it may read,
// because a model choosing URLs is untrusted input aimed at the network the
// host sits in.
type HTTPFetchOptions struct {
	// AllowedHosts lists the hosts the tool may fetch from, and the address
	// ranges beyond the public Internet it may connect to; it must not be
	// empty when http_fetch is enabled. A URL's host is matched, case
	// insensitively and as written (the name is not resolved for this):
	//
	//   - "api.example.com" allows that exact host on the scheme's default
	//     port (80 for http, 443 for https);
	//   - "*.example.com" allows every subdomain of example.com (not
	//     example.com itself) on the default ports; the domain may not be
	//     a public suffix ("*.co.uk", "*.github.io");
	//   - "intranet:8080", "*.example.com:8443" or "[2606:4700::1111]:8080"
	//     allow that port only;
	//   - a public IP address ("203.0.113.7" is not one; "93.184.215.14"
	//     is) allows that address literal; IP addresses are never matched
	//     by a wildcard;
	//   - a CIDR range ("10.0.0.0/8", "127.0.0.1/32:8080",
	//     "[fd00::/8]:8443") allows URLs whose host is an address literal
	//     in it, on the default ports or the port given.
	//
	// Then every connection is checked once DNS has answered, on redirects
	// too: an address that is not public unicast (loopback, private,
	// link-local, CGNAT, multicast, unspecified, other special-purpose
	// ranges, cloud metadata services) is refused unless a CIDR entry
	// contains it and allows the port. So "wiki.corp" resolving to
	// 10.1.2.3 needs "wiki.corp" and "10.0.0.0/8" (or "10.1.2.3/32"). A
	// metadata address such as 169.254.169.254 opens only to an entry
	// naming that single address ("169.254.169.254/32"). Entries that
	// always mean this machine ("localhost", "0.0.0.0") and bare
	// special-purpose addresses ("127.0.0.1") are refused: write the CIDR.
	AllowedHosts []string `json:"allow_hosts,omitempty"`
	// MaxBytes caps the response body kept; zero means a default of 1 MiB,
	// and the most allowed is 64 MiB.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// Timeout caps one fetch, redirects and reading the body included; zero
	// means a default of 10 seconds.
	Timeout sdk.Duration `json:"timeout,omitzero"`
}

// ParseOptions decodes Options from JSON, strictly: unknown keys and
// trailing data are errors. Empty input (or only white space) gives the
// zero Options, which means the defaults.
func ParseOptions(raw []byte) (Options, error) {
	var o Options
	if err := sdk.UnmarshalStrict(raw, &o); err != nil {
		return Options{}, err
	}
	return o, nil
}
