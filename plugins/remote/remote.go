// Package remote is the remote-client bridge: the provider behind every
// tool that runs in the client. It judges remote tools and their calls by
// the same rules everywhere — shapes normalised, schemas validated, no
// client tool shadowing a name the node has, arguments checked — and answers
// a valid call with Deferred, which the host turns into a
// RemoteToolCallBlock and a pause. It never runs a tool, and it keeps no
// state: the specs it judges travel with each request, so it can run as a
// plugin subprocess (`tenxgraph plugin remote`) or in-process alike.
package remote

import (
	"context"
	"fmt"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Name is the bridge's provider name.
const Name = "remote"

// Version is the bridge's version.
const Version = "1.0.0"

// Bridge is the remote-client bridge. Its zero value is ready to use.
type Bridge struct{}

// New returns a bridge.
func New() *Bridge { return &Bridge{} }

// Metadata implements sdk.Provider. The bridge has no tools of its own: the
// remote tools it judges are declared on the server (config or
// AttachRemoteTools) or by the run's client.
func (*Bridge) Metadata(context.Context, sdk.MetadataRequest) (sdk.MetadataResponse, error) {
	return sdk.MetadataResponse{Name: Name, Version: Version,
		Capabilities: []string{sdk.CapabilityRemote, sdk.CapabilityRunTools}}, nil
}

// CallTool implements sdk.Provider: it checks the call's arguments against
// the tool's schema (req.RunTool) and defers a valid call to the client.
// Invalid arguments get an error result the model can read and never reach
// the client.
func (*Bridge) CallTool(_ context.Context, req sdk.CallToolRequest) (sdk.CallToolResponse, error) {
	if req.RunTool == nil {
		return sdk.CallToolResponse{}, fmt.Errorf("%w %q: the bridge judges calls against the spec sent with them, and none was sent", sdk.ErrUnknownTool, req.Name)
	}
	schema, err := toolspec.Compile(req.RunTool.Parameters)
	if err != nil {
		return sdk.CallToolResponse{}, fmt.Errorf("tool %q: parameters: %w", req.Name, err)
	}
	if err := schema.Validate(req.Arguments); err != nil {
		return sdk.ErrorResult(fmt.Errorf("tool %q: %w. Fix the arguments and call it again", req.Name, err)), nil
	}
	return sdk.CallToolResponse{Deferred: true}, nil
}

// PrepareRun implements sdk.RunToolsProvider: it reads the run's client
// tools in the flat or OpenAI shape, refuses invalid ones (every problem
// with its path under remote_tools), and leaves out those whose name is
// taken, saying why.
func (*Bridge) PrepareRun(_ context.Context, req sdk.PrepareRunRequest) (sdk.PrepareRunResponse, error) {
	var resp sdk.PrepareRunResponse
	specs, err := toolspec.ParseRunTools(req.RunTools)
	if err != nil {
		if ps, ok := err.(toolspec.Problems); ok {
			resp.Problems = ps // one Problem type on both sides
			return resp, nil
		}
		return resp, err
	}
	taken := make(map[string]bool, len(req.Taken))
	for _, n := range req.Taken {
		taken[n] = true
	}
	for _, s := range specs {
		if taken[s.Name] {
			resp.Ignored = append(resp.Ignored, sdk.IgnoredTool{Name: s.Name,
				Reason: toolspec.Shadowed("", "", s.Name, "")})
			continue
		}
		resp.Tools = append(resp.Tools, s)
	}
	return resp, nil
}

var (
	_ sdk.Provider         = (*Bridge)(nil)
	_ sdk.RunToolsProvider = (*Bridge)(nil)
)
