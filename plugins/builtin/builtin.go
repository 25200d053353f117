// Package builtin is the tool provider that ships inside the tenxgraph
// binary: small, dependable tools (a calculator, the current time) that a
// graph can enable by name without installing anything.
//
// It is a plain sdk.Provider so that the host treats it exactly like a
// third-party plugin: today it runs in the host's process, and serving it as
// a go-plugin subprocess (`tenxgraph plugin builtin`) changes nothing in the
// code that calls it.
package builtin

import (
	"fmt"
	"slices"
	"strings"
	"time"

	// Zones are embedded so current_time works on machines without a system
	// zoneinfo database (scratch containers, minimal CI images, Windows).
	_ "time/tzdata"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// Name is the provider name the builtin tools are listed and logged under,
// and the argument `tenxgraph plugin` serves them by.
const Name = "builtin"

// Version is the provider's version as reported in its metadata, so a host
// log tells which tool behaviour a run saw.
const Version = "0.1.0"

// Options chooses the builtin tools a graph gets and configures the ones that
// reach outside the process. It is a plain struct so the config file maps
// onto it one to one.
type Options struct {
	// Enable lists the tools to serve by name. Empty means DefaultTools():
	// the tools without side effects, which are safe to offer to any model.
	Enable []string
	// HTTPFetch configures http_fetch when it is enabled.
	HTTPFetch HTTPFetchOptions
	// WorkspaceRoot is the only folder the file tools (read_file, write_file,
	// list_files) may touch; they refuse every path outside it.
	WorkspaceRoot string
}

// HTTPFetchOptions bounds what http_fetch may reach and how much it may read,
// because a model choosing URLs is untrusted input aimed at the network the
// host sits in. The tool is not implemented yet; the fields fix the shape the
// config will fill.
type HTTPFetchOptions struct {
	// AllowedHosts lists the host names the tool may fetch from; empty means
	// none.
	AllowedHosts []string
	// Timeout caps one fetch; zero means a default of 10 seconds.
	Timeout time.Duration
	// MaxBytes caps the response body kept; zero means a default of 1 MiB.
	MaxBytes int64
}

// DefaultTools lists the tools enabled when Options.Enable is empty: pure
// functions of their arguments and the clock, with nothing to configure and
// nothing to leak. It returns a fresh slice each time, so no caller can
// change another's default.
func DefaultTools() []string { return []string{"calculator", "current_time"} }

// known maps every builtin tool name to its constructor; nil marks a tool
// that is planned but not implemented yet.
var known = map[string]func(Options) sdk.Tool{
	"calculator":   func(Options) sdk.Tool { return calculatorTool() },
	"current_time": func(Options) sdk.Tool { return currentTimeTool(time.Now) },
	"http_fetch":   nil,
	"read_file":    nil,
	"write_file":   nil,
	"list_files":   nil,
}

func knownNames() []string {
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func implementedNames() []string {
	var names []string
	for _, n := range knownNames() {
		if known[n] != nil {
			names = append(names, n)
		}
	}
	return names
}

// New builds the builtin provider with the tools opts enables. Every mistake
// in opts is reported at once (unknown names, duplicates, tools not
// implemented yet), so a config file is fixed in one edit.
func New(opts Options) (sdk.Provider, error) {
	enable := opts.Enable
	if len(enable) == 0 {
		enable = DefaultTools()
	}
	var (
		problems []string
		tools    []sdk.Tool
		seen     = map[string]bool{}
	)
	for _, name := range enable {
		ctor, ok := known[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("unknown tool %q (known tools: %s)", name, strings.Join(knownNames(), ", ")))
			continue
		case seen[name]:
			problems = append(problems, fmt.Sprintf("tool %q is enabled twice; list it once", name))
			continue
		case ctor == nil:
			problems = append(problems, fmt.Sprintf("tool %q is not implemented yet; remove it from enable (available now: %s)", name, strings.Join(implementedNames(), ", ")))
			continue
		}
		seen[name] = true
		tools = append(tools, ctor(opts))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("builtin tools: %s", strings.Join(problems, "; "))
	}
	p, err := sdk.NewTools(Name, Version, tools...)
	if err != nil {
		// Return a nil interface, not a typed nil *sdk.Tools.
		return nil, fmt.Errorf("builtin tools: %w", err)
	}
	return p, nil
}
