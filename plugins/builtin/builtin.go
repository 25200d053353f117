// Package builtin is the tool provider that ships inside the tenxgraph
// binary: small, dependable tools that a graph can enable by name without
// installing anything. calculator and current_time are pure and on by
// default; http_fetch (confined to allowed hosts) and read_file, write_file
// and list_files (confined to a workspace folder) reach outside the process
// and are on only when enabled.
//
// It is a plain sdk.Provider so that the host treats it exactly like a
// third-party plugin: today it runs in the host's process, and serving it as
// a go-plugin subprocess (`tenxgraph plugin builtin`) changes nothing in the
// code that calls it. Options travel to such a subprocess as JSON, sent by
// the host with Configure (sdk.Configured), never in its environment.
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

// DefaultTools lists the tools enabled when Options.Enable is empty: pure
// functions of their arguments and the clock, with nothing to configure and
// nothing to leak. It returns a fresh slice each time, so no caller can
// change another's default.
func DefaultTools() []string { return []string{"calculator", "current_time"} }

// toolEnv is what the tools that reach outside the process are built from,
// once New has checked the options.
type toolEnv struct {
	fetch *fetcher
	ws    *workspace
}

// constructors maps every builtin tool name to its constructor.
var constructors = map[string]func(toolEnv) sdk.Tool{
	"calculator":   func(toolEnv) sdk.Tool { return calculatorTool() },
	"current_time": func(toolEnv) sdk.Tool { return currentTimeTool(time.Now) },
	"http_fetch":   func(e toolEnv) sdk.Tool { return e.fetch.tool() },
	"read_file":    func(e toolEnv) sdk.Tool { return readFileTool(e.ws) },
	"write_file":   func(e toolEnv) sdk.Tool { return writeFileTool(e.ws) },
	"list_files":   func(e toolEnv) sdk.Tool { return listFilesTool(e.ws) },
}

// fileTools are the tools confined to Options.WorkspaceRoot.
var fileTools = []string{"read_file", "write_file", "list_files"}

func knownNames() []string {
	names := make([]string, 0, len(constructors))
	for n := range constructors {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New builds the builtin provider with the tools opts enables. Every mistake
// in opts is reported at once (unknown names, duplicates, an http_fetch
// without allowed hosts, file tools without a usable workspace root), so a
// config file is fixed in one edit. Options of tools that are not enabled
// are ignored.
func New(opts Options) (sdk.Provider, error) {
	enable := opts.Enable
	if len(enable) == 0 {
		enable = DefaultTools()
	}
	var (
		problems []string
		names    []string
		seen     = map[string]bool{}
	)
	for _, name := range enable {
		_, ok := constructors[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("unknown tool %q (known tools: %s)", name, strings.Join(knownNames(), ", ")))
			continue
		case seen[name]:
			problems = append(problems, fmt.Sprintf("tool %q is enabled twice; list it once", name))
			continue
		}
		seen[name] = true
		names = append(names, name)
	}
	var env toolEnv
	if seen["http_fetch"] {
		var ps []string
		env.fetch, ps = newFetcher(opts.HTTPFetch)
		problems = append(problems, ps...)
	}
	var files []string
	for _, n := range fileTools {
		if seen[n] {
			files = append(files, n)
		}
	}
	if len(files) > 0 {
		var ps []string
		env.ws, ps = newWorkspace(opts.WorkspaceRoot, files)
		problems = append(problems, ps...)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("builtin tools: %s", strings.Join(problems, "; "))
	}
	tools := make([]sdk.Tool, 0, len(names))
	for _, name := range names {
		tools = append(tools, constructors[name](env))
	}
	p, err := sdk.NewTools(Name, Version, tools...)
	if err != nil {
		// Return a nil interface, not a typed nil *sdk.Tools.
		return nil, fmt.Errorf("builtin tools: %w", err)
	}
	return p, nil
}
