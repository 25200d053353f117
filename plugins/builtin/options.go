package builtin

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// EnvOptions is the environment variable through which a host hands Options
// to the builtin provider running as a plugin subprocess: the JSON encoding
// of Options (see Options.Environ). Unset or empty means the defaults.
const EnvOptions = "TENXGRAPH_BUILTIN_OPTIONS"

// Options chooses the builtin tools a graph gets and configures the ones that
// reach outside the process. It is a plain struct so the config file maps
// onto it one to one, and it travels to a plugin subprocess as JSON:
//
//	{
//	  "enable": ["http_fetch", "read_file"],
//	  "http_fetch": {"allow_hosts": ["api.example.com", "*.example.org", "localhost:8080"],
//	                 "max_bytes": 1048576, "timeout_ms": 10000},
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
//
// In JSON, Timeout is "timeout_ms", a whole number of milliseconds.
type HTTPFetchOptions struct {
	// AllowedHosts lists the hosts the tool may fetch from; it must not be
	// empty when http_fetch is enabled. Entries are matched by name, case
	// insensitively, against the URL's host (the name is never resolved
	// first):
	//
	//   - "api.example.com" allows that exact host on the scheme's default
	//     port (80 for http, 443 for https);
	//   - "*.example.com" allows every subdomain of example.com (not
	//     example.com itself) on the default ports;
	//   - "localhost:8080", "*.example.com:8443" or "[::1]:8080" allow that
	//     port only;
	//   - an IP address ("127.0.0.1", "::1") allows that address literal;
	//     IP addresses are never matched by a wildcard.
	AllowedHosts []string `json:"allow_hosts,omitempty"`
	// MaxBytes caps the response body kept; zero means a default of 1 MiB,
	// and the most allowed is 64 MiB.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// Timeout caps one fetch, redirects and reading the body included; zero
	// means a default of 10 seconds. JSON spells it "timeout_ms", a whole
	// number of milliseconds (see MarshalJSON).
	Timeout time.Duration `json:"-"`
}

// httpFetchFields is HTTPFetchOptions without its methods, so the JSON
// methods below can embed it without recursing.
type httpFetchFields HTTPFetchOptions

// httpFetchJSON is HTTPFetchOptions as it is spelled in JSON.
type httpFetchJSON struct {
	httpFetchFields
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// MarshalJSON encodes the options with Timeout as "timeout_ms". A positive
// timeout below one millisecond is rounded up, so it never turns into the
// default.
func (o HTTPFetchOptions) MarshalJSON() ([]byte, error) {
	ms := o.Timeout.Milliseconds()
	if o.Timeout > 0 && o.Timeout%time.Millisecond != 0 {
		ms++
	}
	return json.Marshal(httpFetchJSON{httpFetchFields: httpFetchFields(o), TimeoutMS: ms})
}

// UnmarshalJSON decodes the options strictly (package strictjson): an
// unknown, repeated or wrong-case key is an error,
// because a misspelt limit silently falling back to its default is worse.
func (o *HTTPFetchOptions) UnmarshalJSON(raw []byte) error {
	var j httpFetchJSON
	if err := strictjson.Unmarshal(raw, &j); err != nil {
		return err
	}
	if j.TimeoutMS > math.MaxInt64/int64(time.Millisecond) || j.TimeoutMS < math.MinInt64/int64(time.Millisecond) {
		return fmt.Errorf("http_fetch: timeout_ms %d is out of range", j.TimeoutMS)
	}
	*o = HTTPFetchOptions(j.httpFetchFields)
	o.Timeout = time.Duration(j.TimeoutMS) * time.Millisecond
	return nil
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

// OptionsFromEnv reads Options from the environment variable EnvOptions, as
// a plugin subprocess does at startup. An unset or empty variable gives the
// defaults; malformed JSON is an error naming the variable.
func OptionsFromEnv() (Options, error) {
	o, err := ParseOptions([]byte(os.Getenv(EnvOptions)))
	if err != nil {
		return Options{}, fmt.Errorf(`%s is not valid builtin tools options: %v (want a JSON object such as {"enable": ["calculator"], "http_fetch": {"allow_hosts": ["api.example.com"]}, "workspace_root": "/path/to/folder"}, or leave it unset for the defaults)`, EnvOptions, err)
	}
	return o, nil
}

// Environ returns the "NAME=value" entry that hands o to a builtin provider
// subprocess, for exec.Cmd.Env.
func (o Options) Environ() (string, error) {
	raw, err := json.Marshal(o)
	if err != nil {
		return "", fmt.Errorf("encode builtin tools options: %w", err)
	}
	return EnvOptions + "=" + string(raw), nil
}
