package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
	aguisse "github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/encoding/sse"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/remotetool"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// The AG-UI endpoint. An AG-UI client sends its whole transcript with each
// run, and its own tools; the server keeps the authoritative thread. So a
// request is read as: which of these messages are new to the thread, and do
// they resume a pause? Frontend tools use the two-run pattern by default
// (TOOL_CALL_* then a plain RUN_FINISHED; the next run carries the tool
// messages); a client that opts in with forwardedProps.tenxgraph.interrupts
// gets RUN_FINISHED.outcome interrupts and answers with resume[].
// forwardedProps.tenxgraph.durability is a run request's config.durability.

func (s *Server) handleAGUI(w http.ResponseWriter, r *http.Request) {
	var in types.RunAgentInput
	data, err := io.ReadAll(r.Body)
	if err != nil {
		writeErr(w, err) // *http.MaxBytesError: 413
		return
	}
	if len(bytes.TrimSpace(data)) == 0 {
		writeErr(w, fmt.Errorf("%w: RunAgentInput: empty body: send a JSON object", errMalformed))
		return
	}
	// The AG-UI SDK reads the body's fields itself (accepting the
	// snake_case spellings some clients send); strictjson checks the whole
	// text first: duplicate keys and invalid UTF-8 are refused.
	if err := strictjson.Unmarshal(data, &in); err != nil {
		writeErr(w, fmt.Errorf("%w: RunAgentInput: %s", errMalformed, describeAGUIError(err)))
		return
	}
	if in.ThreadID == "" {
		writeErr(w, fmt.Errorf("%w: threadId: required", errMalformed))
		return
	}
	if err := thread.CheckThreadID("threadId", in.ThreadID); err != nil {
		writeErr(w, err)
		return
	}
	if in.RunID == "" {
		in.RunID = events.GenerateRunID()
	}
	peer := aguiPeer{thread: in.ThreadID, host: r.Host}
	if peer.v1, err = speaksAGUI1(data); err != nil {
		writeErr(w, err)
		return
	}
	cfg := thread.RunConfig{ThreadID: in.ThreadID, Tenant: tenant(r)}
	if cfg.Durability, err = aguiDurability(in.ForwardedProps); err != nil {
		writeErr(w, err)
		return
	}
	tools := make([]json.RawMessage, 0, len(in.Tools)) // none is none: not the paused run's
	for _, t := range in.Tools {
		raw, err := json.Marshal(map[string]any{"name": t.Name, "description": t.Description, "parameters": t.Parameters})
		if err != nil {
			writeErr(w, fmt.Errorf("%w: tools: %v", errMalformed, err))
			return
		}
		tools = append(tools, raw)
	}
	cfg.Configurable = remotetool.Configurable(tools)
	ctx, stop := s.runContext(r)
	defer stop()
	input, err := s.aguiInput(ctx, in, cfg, peer)
	if err == nil && len(input) > s.cfg.MaxRequestMessages {
		// Refused before the stream opens, as a run request is: a client
		// resends its transcript, so only what is new to the thread counts.
		writeErr(w, tooManyMessages("messages", len(input), s.cfg.MaxRequestMessages, " new to the thread"))
		return
	}
	a := &aguiRun{w: w, ctx: r.Context(), in: in, sse: aguisse.NewSSEWriter(), interrupts: wantsInterrupts(in.ForwardedProps), v1: peer.v1}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if err != nil {
		s.metrics.finished(graph.Result{}, err)
		a.fail(err)
		return
	}
	if !a.interrupts {
		for _, m := range input {
			for _, r := range m.ToolResults() {
				if a.own == nil {
					a.own = map[string]bool{}
				}
				a.own[r.ToolCallID] = true
			}
		}
	}
	for ev, err := range s.svc.App.Stream(ctx, input, cfg) {
		if err != nil {
			s.metrics.finished(graph.Result{}, err)
			a.fail(err)
			return
		}
		if ev.Type == graph.EventEnd {
			s.metrics.finished(ev.Data.(graph.Result), nil)
		}
		a.event(ev)
	}
}

// describeAGUIError names what is wrong with a RunAgentInput. The AG-UI
// SDK decodes it field by field with encoding/json, so a type error does
// not say which field it is in; only the body's own type is known for sure.
func describeAGUIError(err error) string {
	var te *json.UnmarshalTypeError
	var se *strictjson.Error
	switch {
	case errors.As(err, &te) && te.Field == "" && te.Type.Kind() == reflect.Map:
		return "body: must be an object, got " + te.Value
	case errors.As(err, &te) && te.Field == "":
		return fmt.Sprintf("a field has the wrong type: want %s, got %s (threadId and runId are strings; messages, tools, context and resume are arrays)",
			jsonKind(te.Type.Kind()), te.Value)
	case errors.As(err, &se) && se.Path == "":
		return "body: " + se.Msg
	}
	return err.Error()
}

// jsonKind names a Go kind as the JSON a client should send.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	}
	return k.String()
}

// aguiDurability reads forwardedProps.tenxgraph.durability, the AG-UI
// twin of a run request's config.durability ("" when absent).
func aguiDurability(props any) (thread.Durability, error) {
	m, _ := props.(map[string]any)
	t, _ := m["tenxgraph"].(map[string]any)
	v, ok := t["durability"]
	if !ok {
		return "", nil
	}
	s, isString := v.(string)
	d, err := thread.ParseDurability(s)
	if !isString {
		raw, _ := json.Marshal(v) // decoded from JSON: it encodes
		err = fmt.Errorf("must be %q, %q or %q, got %s", thread.DurabilitySync, thread.DurabilityAsync, thread.DurabilityExit, raw)
	}
	if err != nil {
		return "", fmt.Errorf("%w: forwardedProps.tenxgraph.durability: %v", errMalformed, err)
	}
	return d, nil
}

func wantsInterrupts(props any) bool {
	m, _ := props.(map[string]any)
	t, _ := m["tenxgraph"].(map[string]any)
	v, _ := t["interrupts"].(bool)
	return v
}

// aguiPeer is what reading and answering one AG-UI request depends on: the
// protocol the client speaks, and where its thread's blobs are.
type aguiPeer struct {
	// v1: the client speaks AG-UI 1.0 or later, so the server names
	// stored media as 1.0 parts with a file source (and tool messages may
	// carry parts); before 1.0, as legacy binary parts (and tool messages
	// are text).
	v1 bool
	// thread and host: a url to this thread's blob route, relative or on
	// the host the request came to, is that blob, never fetched.
	thread, host string
}

// speaksAGUI1 reads RunAgentInput.protocolVersion, which @ag-ui/client 1.0
// and later send ("1.0") and earlier clients do not (the AG-UI SDK for Go
// does not read it, so the body is read again for it). A "0.x" version, or
// none, is a client before 1.0; any other string is 1.0 or a later one,
// and AG-UI handles a version it cannot read as a later one.
func speaksAGUI1(body []byte) (bool, error) {
	var v struct {
		ProtocolVersion any `json:"protocolVersion"`
		Snake           any `json:"protocol_version"`
	}
	_ = json.Unmarshal(body, &v) // read before, by strictjson: an object
	pv := v.ProtocolVersion
	if pv == nil {
		pv = v.Snake
	}
	if pv == nil {
		return false, nil
	}
	s, ok := pv.(string)
	if !ok {
		return false, fmt.Errorf("%w: protocolVersion: must be a string, the AG-UI version the client speaks (\"1.0\")", errMalformed)
	}
	major, _, _ := strings.Cut(s, ".")
	return s != "" && major != "0", nil
}

// aguiInput finds what is new in an AG-UI request. On a paused thread, the
// new input is the results for pending calls: tool messages answering them,
// or resume entries. Otherwise it is the messages whose ids the thread does
// not have yet; messages the server already has are never appended twice. A
// request whose only new messages are tool results (a result that came late)
// sends those, for the graph to judge.
func (s *Server) aguiInput(ctx context.Context, in types.RunAgentInput, cfg thread.RunConfig, peer aguiPeer) ([]message.Message, error) {
	th, err := s.svc.App.ThreadFor(ctx, cfg.Tenant, in.ThreadID)
	if err != nil && !errors.Is(err, graph.ErrThreadNotFound) {
		return nil, err
	}
	known := map[string]bool{}
	for _, m := range th.Messages {
		known[m.ID] = true
	}
	if len(th.RemoteToolCalls) > 0 || len(th.ApprovalRequests) > 0 {
		return resultsFor(th, in, peer)
	}
	var out, results []message.Message
	for i, m := range in.Messages {
		if known[m.ID] {
			continue
		}
		if m.Role == types.RoleTool && m.ToolCallID != "" {
			r, err := toolResult(m, peer)
			if err != nil {
				return nil, fmt.Errorf("%w: messages[%d]: %w", graph.ErrInvalidInput, i, err)
			}
			results = append(results, message.Message{ID: m.ID, Role: message.RoleTool, Content: []message.Block{r}})
			continue
		}
		msg, ok, err := fromAGUI(m, peer)
		if err != nil {
			return nil, fmt.Errorf("%w: messages[%d]: %w", graph.ErrInvalidInput, i, err)
		}
		if ok {
			out = append(out, msg)
		}
	}
	if len(out) == 0 && len(results) > 0 {
		// Only results, on a thread that waits for none: the graph judges
		// them (a retry gets the recorded outcome, a late result is refused
		// as expired, another result as a conflict).
		return results, nil
	}
	return out, nil
}

// resultsFor builds the tool message that resumes a paused thread from the
// client's tool messages (two-run pattern) and resume entries (interrupts).
// Interrupt ids are the call ids. Resume entries must cover every pending
// call, as AG-UI requires; tool messages may answer some of them.
//
// Approval requests are answered only by resume entries: resolved approves
// (unless its payload says {"approved": false}), cancelled denies; a payload
// may carry a "reason".
func resultsFor(th graph.Result, in types.RunAgentInput, peer aguiPeer) ([]message.Message, error) {
	pending := th.RemoteToolCalls
	for _, a := range th.ApprovalRequests {
		pending = append(pending, message.RemoteToolCallBlock{ID: a.ID, Name: a.Name, Arguments: a.Arguments, Node: a.Node})
	}
	approval := map[string]bool{}
	for _, a := range th.ApprovalRequests {
		approval[a.ID] = true
	}
	isPending := map[string]bool{}
	for _, p := range pending {
		isPending[p.ID] = true
	}
	var answers []message.Message
	seen := map[string]bool{}
	known, calls := map[string]bool{}, map[string]bool{}
	for _, m := range th.Messages {
		known[m.ID] = true
		for _, c := range m.RemoteToolCalls() {
			calls[c.ID] = true
		}
	}
	for i, m := range in.Messages {
		if m.Role != types.RoleTool || approval[m.ToolCallID] || seen[m.ToolCallID] {
			continue
		}
		// A result the thread does not have, for one of its calls that is
		// no longer pending (one that expired, say), goes to the graph
		// too, which judges it: the same result again is ignored, a late
		// one is refused as expired.
		if !isPending[m.ToolCallID] && (!calls[m.ToolCallID] || known[m.ID]) {
			continue
		}
		seen[m.ToolCallID] = true
		r, err := toolResult(m, peer)
		if err != nil {
			return nil, fmt.Errorf("%w: messages[%d]: %w", graph.ErrInvalidInput, i, err)
		}
		answers = append(answers, message.Message{ID: m.ID, Role: message.RoleTool, Content: []message.Block{r}})
	}
	answer := message.Message{Role: message.RoleTool}
	if len(in.Resume) > 0 {
		var missing []string
		byID := map[string]types.ResumeEntry{}
		for _, e := range in.Resume {
			byID[e.InterruptID] = e
		}
		for _, p := range pending {
			e, ok := byID[p.ID]
			switch {
			case seen[p.ID]:
			case !ok:
				missing = append(missing, p.ID)
			case approval[p.ID]:
				b, err := approvalOf(p.ID, e)
				if err != nil {
					return nil, err
				}
				answer.Content = append(answer.Content, b)
			case e.Status == types.ResumeStatusCancelled:
				answer.Content = append(answer.Content, message.ToolResultBlock{ToolCallID: p.ID, Content: jsonString("cancelled by the user: the tool did not run"), IsError: true})
			default:
				raw, err := json.Marshal(e.Payload)
				if err != nil {
					return nil, fmt.Errorf("%w: resume %q: payload: %v", graph.ErrInvalidInput, p.ID, err)
				}
				answer.Content = append(answer.Content, message.ToolResultBlock{ToolCallID: p.ID, Content: raw})
			}
		}
		if len(missing) > 0 {
			return nil, &graph.StateError{Kind: graph.ErrPendingCalls, ThreadID: in.ThreadID, CallIDs: missing,
				Detail: "a resume must address every open interrupt"}
		}
	}
	if len(answer.Content) > 0 {
		answers = append(answers, answer)
	}
	if len(answers) == 0 {
		// Whatever else the client sent, the thread waits for results: the
		// graph refuses new input and names the pending calls.
		for i := len(in.Messages) - 1; i >= 0; i-- {
			if m, ok, _ := fromAGUI(in.Messages[i], peer); ok && m.Role == message.RoleUser {
				return []message.Message{m}, nil
			}
		}
		return nil, &graph.StateError{Kind: graph.ErrPendingCalls, ThreadID: in.ThreadID, CallIDs: pendingIDs(pending),
			Detail: "send tool messages (or resume entries) for them"}
	}
	return answers, nil
}

// approvalOf reads a resume entry that answers an approval request.
func approvalOf(id string, e types.ResumeEntry) (message.ApprovalBlock, error) {
	b := message.ApprovalBlock{ToolCallID: id, Approved: e.Status != types.ResumeStatusCancelled}
	if e.Status == types.ResumeStatusCancelled {
		b.Reason = "cancelled by the user"
	}
	if e.Payload == nil {
		return b, nil
	}
	raw, err := json.Marshal(e.Payload)
	if err != nil {
		return b, fmt.Errorf("%w: resume %q: payload: %v", graph.ErrInvalidInput, id, err)
	}
	var p struct {
		Approved *bool  `json:"approved"`
		Reason   string `json:"reason"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return b, fmt.Errorf("%w: resume %q: payload: want {\"approved\": true|false, \"reason\": \"...\"}", graph.ErrInvalidInput, id)
	}
	if p.Approved != nil && b.Approved {
		b.Approved = *p.Approved
	}
	if p.Reason != "" {
		b.Reason = p.Reason
	}
	return b, nil
}

func pendingIDs(p []message.RemoteToolCallBlock) []string {
	out := make([]string, len(p))
	for i, c := range p {
		out[i] = c.ID
	}
	return out
}

// toolResult reads an AG-UI tool message: content that is JSON stays JSON,
// other text becomes a string; an error marks the result as failed. Content
// parts (AG-UI 1.0) are read as in a user message: their text is the
// result, and their images, sounds and documents its attachments.
func toolResult(m types.Message, peer aguiPeer) (message.ToolResultBlock, error) {
	text := contentText(m.Content)
	var attachments []message.MediaBlock
	if parts, ok := m.Content.([]any); ok {
		blocks, err := aguiParts(parts, true, peer)
		if err != nil {
			return message.ToolResultBlock{}, err
		}
		var t strings.Builder
		for _, b := range blocks {
			switch b := b.(type) {
			case message.TextBlock:
				t.WriteString(b.Text)
			case message.MediaBlock:
				attachments = append(attachments, b)
			}
		}
		text = t.String()
	}
	r := message.ToolResultBlock{ToolCallID: m.ToolCallID, Content: jsonString(text), Attachments: attachments}
	switch {
	case m.Error != "":
		if text == "" {
			r.Content = jsonString(m.Error)
		}
		r.IsError = true
	case strings.TrimSpace(text) != "" && strictjson.Check([]byte(text)) == nil:
		// Text that is JSON the store can read back (strictjson: no key
		// twice, at most MaxDepth deep) is kept as that JSON; other text
		// as a string.
		r.Content = json.RawMessage(text)
	}
	return r, nil
}

func jsonString(s string) json.RawMessage {
	raw, _ := json.Marshal(s) // a string always encodes
	return raw
}

// fromAGUI converts a client message that may start or continue a thread:
// user, system and developer text, and assistant text; a user message's
// images, sounds and documents become media blocks (see aguiParts). Tool
// calls are never taken from a client (only the model makes them); tool
// messages are only read as results for pending calls.
func fromAGUI(m types.Message, peer aguiPeer) (message.Message, bool, error) {
	var role message.Role
	switch m.Role {
	case types.RoleUser:
		role = message.RoleUser
	case types.RoleSystem, types.RoleDeveloper:
		role = message.RoleSystem
	case types.RoleAssistant:
		if len(m.ToolCalls) > 0 {
			return message.Message{}, false, nil
		}
		role = message.RoleAssistant
	default:
		return message.Message{}, false, nil
	}
	blocks, err := aguiParts(m.Content, role == message.RoleUser, peer)
	if err != nil {
		return message.Message{}, false, err
	}
	return message.Message{ID: m.ID, Role: role, Content: blocks}, true, nil
}

// aguiParts reads AG-UI content: a string, or parts. Text parts in a row
// make one text block. Where media may stand, the multimodal parts of
// @ag-ui/core (image, audio, document, with a source of type "data",
// base64, "url", or "file", a blob the thread holds) and the legacy binary
// part (mimeType with data, url or id) become image, audio and file blocks
// (see aguiMedia). Video is refused. A part that cannot be read says where
// (content[i] and its key).
func aguiParts(content any, media bool, peer aguiPeer) ([]message.Block, error) {
	switch c := content.(type) {
	case nil:
		return []message.Block{message.TextBlock{}}, nil
	case string:
		return []message.Block{message.TextBlock{Text: c}}, nil
	case []any:
		var (
			out  []message.Block
			text strings.Builder
			open bool
		)
		flush := func() {
			if open {
				out = append(out, message.TextBlock{Text: text.String()})
				text.Reset()
				open = false
			}
		}
		for i, part := range c {
			p, _ := part.(map[string]any)
			typ, _ := p["type"].(string)
			if typ == "text" {
				t, _ := p["text"].(string)
				text.WriteString(t)
				open = true
				continue
			}
			if !media {
				return nil, fmt.Errorf("content[%d]: only text parts are supported here; %v parts stand only in a user or tool message", i, p["type"])
			}
			b, err := aguiMedia(p, peer)
			if err != nil {
				return nil, strictjson.At(fmt.Sprintf("content[%d]", i), err)
			}
			flush()
			out = append(out, b)
		}
		flush()
		if len(out) == 0 {
			out = []message.Block{message.TextBlock{}}
		}
		return out, nil
	}
	return nil, fmt.Errorf("content: want a string or parts")
}

// aguiPart is an AG-UI content part, in either spelling of its keys.
type aguiPart struct {
	Type      string `json:"type"`
	MimeType  string `json:"mimeType"`
	MimeType2 string `json:"mime_type"`
	ID        string `json:"id"`
	URL       string `json:"url"`
	Data      string `json:"data"`
	Filename  string `json:"filename"`
	Metadata  any    `json:"metadata"`
	Source    *struct {
		Type      string `json:"type"`
		Value     string `json:"value"`
		Provider  string `json:"provider"`
		MimeType  string `json:"mimeType"`
		MimeType2 string `json:"mime_type"`
	} `json:"source"`
}

// blobProvider is the provider the server names in the file sources it
// sends (AG-UI 1.0: the handle's value is opaque, and only its provider
// can read it): a peer that sees another provider's handle drops the part
// instead of sending "sha256:..." to a model provider as a file id.
const blobProvider = "tenxgraph"

// aguiMedia converts one media part into a media block; the host checks
// its bytes when the run takes it in. A url that is a data: URL is its
// data; a url to this thread's blob route, a file source (AG-UI 1.0) and a
// binary part's id name a blob the thread holds ("sha256:<hex>"), as the
// server's MESSAGES_SNAPSHOT does.
func aguiMedia(p map[string]any, peer aguiPeer) (message.Block, error) {
	raw, _ := json.Marshal(p) // decoded from JSON: it encodes
	var part aguiPart
	if err := json.Unmarshal(raw, &part); err != nil {
		return nil, err
	}
	mimeType := cmp.Or(part.MimeType, part.MimeType2)
	var kind, data, url, blob string
	switch part.Type {
	case "image":
		kind = message.TypeImage
	case "audio":
		kind = message.TypeAudio
	case "document":
		kind = message.TypeFile
	case "video":
		return nil, &strictjson.Error{Path: "type", Msg: "video is not accepted (images, audio and documents are)"}
	case "binary":
		switch {
		case strings.HasPrefix(mimeType, "image/"):
			kind = message.TypeImage
		case strings.HasPrefix(mimeType, "audio/"):
			kind = message.TypeAudio
		default:
			kind = message.TypeFile
		}
		switch {
		case part.Data != "":
			data = part.Data
		case part.URL != "":
			url = part.URL
		case part.ID != "":
			if !message.ValidBlobRef(part.ID) {
				return nil, &strictjson.Error{Path: "id", Msg: fmt.Sprintf("%q is not a blob of this server (\"sha256:\" and 64 lowercase hex digits); send the bytes as data", part.ID)}
			}
			blob = part.ID
		default:
			return nil, errors.New("a binary part needs data, url or id")
		}
	default:
		return nil, &strictjson.Error{Path: "type", Msg: fmt.Sprintf("unknown part type %q (text, image, audio, document or binary)", part.Type)}
	}
	if part.Type != "binary" {
		if part.Source == nil {
			return nil, &strictjson.Error{Path: "source", Msg: `missing: {"type": "data", "url" or "file", "value": ...}`}
		}
		mimeType = cmp.Or(part.Source.MimeType, part.Source.MimeType2, mimeType)
		// AG-UI 1.0 parts keep a filename in their metadata (as
		// @ag-ui/client does when it converts a binary part).
		if m, ok := part.Metadata.(map[string]any); ok {
			if f, ok := m["filename"].(string); ok {
				part.Filename = f
			}
		}
		switch v := part.Source.Value; part.Source.Type {
		case "data":
			data = v
		case "url":
			url = v
		case "file":
			if part.Source.Provider != "" && part.Source.Provider != blobProvider {
				return nil, &strictjson.Error{Path: "source.provider", Msg: fmt.Sprintf("%q: a handle another provider issued, which this server cannot read; send the bytes as data (a file source names a blob of this server, provider %q)", part.Source.Provider, blobProvider)}
			}
			if !message.ValidBlobRef(v) {
				return nil, &strictjson.Error{Path: "source.value", Msg: fmt.Sprintf("%q is not a blob of this server (\"sha256:\" and 64 lowercase hex digits); send the bytes as data", v)}
			}
			blob = v
		default:
			return nil, &strictjson.Error{Path: "source.type", Msg: fmt.Sprintf(`want "data", "url" or "file", got %q`, part.Source.Type)}
		}
	}
	// Where the client put what the block reads, for messages.
	dataKey, urlKey, typeKey := "data", "url", "mimeType"
	if part.Type != "binary" {
		dataKey, urlKey, typeKey = "source.value", "source.value", "source.mimeType"
	}
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		t, d, err := dataURL(rest)
		if err != nil {
			return nil, &strictjson.Error{Path: urlKey, Msg: err.Error()}
		}
		mimeType, data, url = cmp.Or(mimeType, t), d, ""
	}
	if ref, ok := peer.ownBlob(url); ok {
		url, blob = "", ref
	}
	if url != "" {
		return message.MediaBlock{Kind: kind, MimeType: mimeType, Filename: part.Filename, URL: url}, nil
	}
	// Data and blobs go through the message decoder, the one reader of
	// base64 and references.
	w := map[string]string{"type": kind, "mime_type": mimeType}
	if part.Filename != "" {
		w["filename"] = part.Filename
	}
	if blob != "" {
		w["blob"] = blob
	} else {
		w["data"] = data
	}
	raw, _ = json.Marshal(w)
	b, err := message.UnmarshalBlock(raw)
	var se *strictjson.Error
	if errors.As(err, &se) {
		switch se.Path {
		case "data":
			se.Path = dataKey
		case "mime_type":
			se.Path = typeKey
		}
	}
	return b, err
}

// ownBlob reads a url that names one of this thread's blobs at its route,
// /v1/threads/{thread_id}/blobs/sha256:<hex>, relative or on the host the
// request came to: it is that blob, never fetched (the server would fetch
// its own route without the client's credentials, and the bytes are
// here). A url to another thread's route is a url like any other.
func (p aguiPeer) ownBlob(raw string) (string, bool) {
	if raw == "" {
		return "", false
	}
	u, err := neturl.Parse(raw)
	if err != nil || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", false
	}
	if u.Scheme != "" || u.Host != "" {
		if (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, p.host) {
			return "", false
		}
	}
	ref, ok := strings.CutPrefix(u.Path, "/v1/threads/"+p.thread+"/blobs/")
	if !ok || !message.ValidBlobRef(ref) {
		return "", false
	}
	return ref, true
}

// dataURL reads the part of a data: URL after "data:": its media type and
// its bytes as base64.
func dataURL(rest string) (mimeType, b64 string, err error) {
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", errors.New("a data: URL has a comma before its data")
	}
	if t, ok := strings.CutSuffix(meta, ";base64"); ok {
		return t, payload, nil
	}
	raw, err := neturl.PathUnescape(payload)
	if err != nil {
		return "", "", fmt.Errorf("the data: URL's data: %v", err)
	}
	return meta, base64.StdEncoding.EncodeToString([]byte(raw)), nil
}

func contentText(content any) string {
	switch c := content.(type) {
	case nil:
		return ""
	case string:
		return c
	}
	raw, _ := json.Marshal(content)
	return string(raw)
}

// aguiRun writes one run's AG-UI events, keeping the stream valid: text
// messages and tool calls are closed before anything else starts, and before
// RUN_FINISHED.
type aguiRun struct {
	w          http.ResponseWriter
	ctx        context.Context
	in         types.RunAgentInput
	sse        *aguisse.SSEWriter
	interrupts bool
	started    bool
	textOpen   string // id of the open text message
	streamed   map[string]bool
	inRun      bool // past the run's input: nodes are running
	// own are the calls the client answered with its own tool messages
	// in this request (two-run pattern): their results are not echoed.
	own map[string]bool
	// v1: the client speaks AG-UI 1.0 (see aguiPeer).
	v1 bool
}

func (a *aguiRun) emit(e events.Event) {
	if a.ctx.Err() != nil {
		return // the client is gone (a run that continues without it)
	}
	_ = a.sse.WriteEvent(a.ctx, a.w, e)
}

func (a *aguiRun) start() {
	if !a.started {
		a.started = true
		a.emit(events.NewRunStartedEvent(a.in.ThreadID, a.in.RunID))
	}
}

func (a *aguiRun) closeText() {
	if a.textOpen != "" {
		a.emit(events.NewTextMessageEndEvent(a.textOpen))
		a.textOpen = ""
	}
}

func (a *aguiRun) fail(err error) {
	a.closeText()
	_, b := errorBody(err)
	if !a.started {
		// AG-UI allows a stream to open with RUN_ERROR.
		a.started = true
	}
	a.emit(events.NewRunErrorEvent(b.Error.Message, events.WithErrorCode(b.Error.Code)))
}

func (a *aguiRun) event(ev graph.Event) {
	a.start()
	switch d := ev.Data.(type) {
	case graph.NodeEvent:
		a.inRun = true
	case graph.TextDelta:
		if d.Text == "" {
			return
		}
		if a.textOpen != d.MessageID {
			a.closeText()
			a.emit(events.NewTextMessageStartEvent(d.MessageID, events.WithRole("assistant")))
			a.textOpen = d.MessageID
			if a.streamed == nil {
				a.streamed = map[string]bool{}
			}
			a.streamed[d.MessageID] = true
		}
		a.emit(events.NewTextMessageContentEvent(d.MessageID, d.Text))
	case message.Message:
		a.message(d)
	case graph.Result:
		a.closeText()
		// State, then messages, before RUN_FINISHED: what a client needs to
		// continue is on the wire before the run ends (AG-UI's rule for
		// interrupts, kept for every run).
		values := d.Values
		if values == nil {
			values = map[string]json.RawMessage{}
		}
		a.emit(events.NewStateSnapshotEvent(values))
		a.emit(messagesSnapshot{events.NewMessagesSnapshotEvent(toAGUI(d.Messages, a.v1))})
		if d.Status == graph.StatusInterrupted && a.interrupts {
			var its []types.Interrupt
			for _, c := range d.RemoteToolCalls {
				it := types.Interrupt{ID: c.ID, Reason: "tool_call", ToolCallID: c.ID,
					Message: fmt.Sprintf("run the client tool %s and resume with its result", c.Name)}
				if !c.ExpiresAt.IsZero() {
					it.ExpiresAt = c.ExpiresAt.Format(time.RFC3339Nano)
				}
				its = append(its, it)
			}
			for _, c := range d.ApprovalRequests {
				var args any
				_ = json.Unmarshal(c.Arguments, &args) // the thread's own JSON
				its = append(its, types.Interrupt{ID: c.ID, Reason: "approval", ToolCallID: c.ID,
					Message:  fmt.Sprintf("approve or deny the call to tool %s: resume resolved to approve, cancelled to deny", c.Name),
					Metadata: map[string]any{"name": c.Name, "arguments": args}})
			}
			a.emit(events.NewRunFinishedEventWithOptions(a.in.ThreadID, a.in.RunID, events.WithInterruptOutcome(its)))
			return
		}
		if d.Status == graph.StatusInterrupted && len(d.ApprovalRequests) > 0 {
			names := make([]string, len(d.ApprovalRequests))
			for i, c := range d.ApprovalRequests {
				names[i] = fmt.Sprintf("%s (call %s)", c.Name, c.ID)
			}
			a.emit(events.NewRunErrorEvent(fmt.Sprintf("the run paused for approval of %s; AG-UI clients answer approvals through interrupts: send forwardedProps {\"tenxgraph\": {\"interrupts\": true}} and resume the thread", strings.Join(names, ", ")),
				events.WithErrorCode("approval_required")))
			return
		}
		a.emit(events.NewRunFinishedEvent(a.in.ThreadID, a.in.RunID))
	}
}

func (a *aguiRun) message(m message.Message) {
	switch {
	case m.Role == message.RoleAssistant:
		a.closeText()
		if text := m.Text(); text != "" && !a.streamed[m.ID] {
			a.emit(events.NewTextMessageStartEvent(m.ID, events.WithRole("assistant")))
			a.emit(events.NewTextMessageContentEvent(m.ID, text))
			a.emit(events.NewTextMessageEndEvent(m.ID))
		}
		for _, c := range m.ToolCalls() {
			a.emit(events.NewToolCallStartEvent(c.ID, c.Name, events.WithParentMessageID(m.ID)))
			a.emit(events.NewToolCallArgsEvent(c.ID, string(c.Arguments)))
			a.emit(events.NewToolCallEndEvent(c.ID))
		}
	case m.Role == message.RoleTool && (a.inRun || a.interrupts):
		// Results of server tools, and (with interrupts) of resumed calls:
		// the client's own tool messages are not echoed back.
		a.closeText()
		results := m.ToolResults()
		for _, r := range results {
			if a.own[r.ToolCallID] {
				continue
			}
			e := events.NewToolCallResultEvent(toolMessageID(m.ID, r.ToolCallID, len(results)), r.ToolCallID, resultText(r))
			if parts := resultParts(r, a.v1); parts != nil {
				a.emit(&toolCallResultParts{ToolCallResultEvent: e, Content: parts})
				continue
			}
			a.emit(e)
		}
	}
}

// toolMessageID names the AG-UI tool message of one result. AG-UI has one
// tool message per call; a thread's tool message may hold several results,
// which then get ids derived from it. The same id is used in
// TOOL_CALL_RESULT and in MESSAGES_SNAPSHOT, so the client never sees one
// result twice.
func toolMessageID(msgID, callID string, results int) string {
	if results == 1 {
		return msgID
	}
	return msgID + "/" + callID
}

// resultText is a result as AG-UI text: a JSON string unquoted, any other
// value as JSON. It is never empty (AG-UI refuses, and the Go SDK silently
// drops, a TOOL_CALL_RESULT without content): an empty string or a missing
// value is sent as its JSON, "" or null.
func resultText(r message.ToolResultBlock) string {
	var s string
	if len(r.Content) > 0 && r.Content[0] == '"' && json.Unmarshal(r.Content, &s) == nil && s != "" {
		return s
	}
	if len(r.Content) == 0 {
		return "null"
	}
	return string(r.Content)
}

// messagesSnapshot is MESSAGES_SNAPSHOT, checked as the AG-UI SDK for Go
// checks it except for what AG-UI 1.0 added, which the SDK (written before
// 1.0) refuses: tool messages whose content is parts.
type messagesSnapshot struct {
	*events.MessagesSnapshotEvent
}

// Validate checks the snapshot with each tool message's parts standing in
// as text.
func (e messagesSnapshot) Validate() error {
	check := *e.MessagesSnapshotEvent
	check.Messages = slices.Clone(e.Messages)
	for i, m := range check.Messages {
		if _, parts := m.Content.([]any); parts && m.Role == types.RoleTool {
			check.Messages[i].Content = ""
		}
	}
	return check.Validate()
}

// toolCallResultParts is TOOL_CALL_RESULT with content parts (AG-UI 1.0),
// which the AG-UI SDK for Go, whose content is a string, cannot write.
type toolCallResultParts struct {
	*events.ToolCallResultEvent
	Content []any `json:"content"`
}

// ToJSON writes the event with its parts (the embedded event's ToJSON
// would write its text).
func (e *toolCallResultParts) ToJSON() ([]byte, error) { return json.Marshal(e) }

// resultParts is a result's content for an AG-UI 1.0 client when it has
// attachments: a text part, its text, then each attachment as a media part
// (see mediaPart). Without attachments, or before 1.0 (where a tool
// message is text only), nil: the content is its text.
func resultParts(r message.ToolResultBlock, v1 bool) []any {
	if !v1 || len(r.Attachments) == 0 {
		return nil
	}
	parts := []any{textPart{Type: types.InputContentTypeText, Text: resultText(r)}}
	for _, mb := range r.Attachments {
		parts = append(parts, mediaPart(mb, true))
	}
	return parts
}

// toAGUI converts the thread for MESSAGES_SNAPSHOT, for a client that
// speaks AG-UI 1.0 (v1) or one before it. Remote calls still pending have
// no tool message: that is how a client knows what to run.
func toAGUI(msgs []message.Message, v1 bool) []types.Message {
	out := make([]types.Message, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case message.RoleTool:
			results := m.ToolResults()
			for _, r := range results {
				tm := types.Message{ID: toolMessageID(m.ID, r.ToolCallID, len(results)), Role: types.RoleTool, ToolCallID: r.ToolCallID, Content: resultText(r)}
				if parts := resultParts(r, v1); parts != nil {
					tm.Content = parts
				}
				if r.IsError {
					tm.Error = resultText(r)
				}
				out = append(out, tm)
			}
		case message.RoleAssistant:
			am := types.Message{ID: m.ID, Role: types.RoleAssistant}
			if t := m.Text(); t != "" {
				am.Content = t
			}
			for _, c := range m.ToolCalls() {
				am.ToolCalls = append(am.ToolCalls, types.ToolCall{ID: c.ID, Type: "function", Function: types.FunctionCall{Name: c.Name, Arguments: string(c.Arguments)}})
			}
			out = append(out, am)
		default:
			out = append(out, types.Message{ID: m.ID, Role: types.Role(m.Role), Content: aguiContent(m, v1)})
		}
	}
	return out
}

// aguiContent is a message's content for MESSAGES_SNAPSHOT: its text, or,
// with media, its parts (see mediaPart), which a client may send back as
// they are.
func aguiContent(m message.Message, v1 bool) any {
	var parts []any
	for _, b := range m.Content {
		if mb, ok := b.(message.MediaBlock); ok {
			if parts == nil {
				parts = []any{}
				for _, t := range m.Content {
					if _, ok := t.(message.MediaBlock); ok {
						break
					}
					if tb, ok := t.(message.TextBlock); ok {
						parts = append(parts, textPart{Type: types.InputContentTypeText, Text: tb.Text})
					}
				}
			}
			parts = append(parts, mediaPart(mb, v1))
			continue
		}
		if tb, ok := b.(message.TextBlock); ok && parts != nil {
			parts = append(parts, textPart{Type: types.InputContentTypeText, Text: tb.Text})
		}
	}
	if parts == nil {
		return m.Text()
	}
	return parts
}

// textPart is a text part; its text is written even when empty (AG-UI
// requires it).
type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// filePart is an AG-UI 1.0 media part whose source is a file: a handle
// (the blob's reference) the server issued, which the client keeps, may
// send back, and reads at /v1/threads/{thread_id}/blobs/{value}.
type filePart struct {
	Type   string `json:"type"`
	Source struct {
		Type     string `json:"type"`
		Value    string `json:"value"`
		Provider string `json:"provider"`
		MimeType string `json:"mimeType"`
	} `json:"source"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// mediaPart names a stored medium by its blob. For an AG-UI 1.0 client, as
// an image, audio or document part with a file source of provider
// "tenxgraph", and its filename, size and pixels in metadata: 1.0 has no
// binary part, and @ag-ui/client 1.0 drops a binary part with only an id.
// A url source to the blob route would not do: a url is for whoever needs
// the bytes to fetch, and this route answers only the thread's token (a
// browser's <img> sends none), while a peer the transcript is forwarded to
// (a model provider, another agent) would try it. Before 1.0, as a binary
// part whose id is the blob.
func mediaPart(mb message.MediaBlock, v1 bool) any {
	if !v1 {
		return types.InputContent{Type: types.InputContentTypeBinary, MimeType: mb.MimeType, ID: mb.Blob, Filename: mb.Filename}
	}
	p := filePart{Type: types.InputContentTypeDocument}
	switch mb.Kind {
	case message.TypeImage:
		p.Type = types.InputContentTypeImage
	case message.TypeAudio:
		p.Type = types.InputContentTypeAudio
	}
	p.Source.Type, p.Source.Value, p.Source.Provider, p.Source.MimeType = "file", mb.Blob, blobProvider, mb.MimeType
	meta := map[string]any{}
	if mb.Filename != "" {
		meta["filename"] = mb.Filename
	}
	if mb.Size > 0 {
		meta["size"] = mb.Size
	}
	if mb.Width > 0 && mb.Height > 0 {
		meta["width"], meta["height"] = mb.Width, mb.Height
	}
	if len(meta) > 0 {
		p.Metadata = meta
	}
	return p
}
