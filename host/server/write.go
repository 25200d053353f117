package server

import (
	"encoding/json"
	"errors"
	"net/http"
)

func writeErr(w http.ResponseWriter, err error) {
	code, b := errorBody(err)
	writeJSON(w, code, b)
}

func writeError(w http.ResponseWriter, status int, code, msg string, ids []string) {
	writeJSON(w, status, body(code, msg, ids))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	raw, err := marshal(v)
	if err != nil {
		status, raw = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"the response could not be encoded"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(raw, '\n'))
}

// sse writes server-sent events: a named event with a JSON data line,
// flushed at once.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) event(name string, data any) {
	if p, ok, err := runParts(data); ok && err == nil {
		// A run's result: its messages from the shared encodings.
		if err := p.writeTo(s.w, "event: "+name+"\ndata: ", "\n\n"); errors.Is(err, errEncoding) {
			panic(http.ErrAbortHandler) // the stream is open: cutting it is the only way left to say so
		}
		if s.f != nil {
			s.f.Flush()
		}
		return
	}
	raw, err := marshal(data)
	if err != nil {
		raw, _ = json.Marshal(body("internal", "event could not be encoded: "+err.Error(), nil))
		name = "error"
	}
	buf := make([]byte, 0, len(raw)+len(name)+16)
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, raw...)
	buf = append(buf, "\n\n"...)
	_, _ = s.w.Write(buf)
	if s.f != nil {
		s.f.Flush()
	}
}

// marshal is json.Marshal, but for a run's response (graph.Result, or a
// DeltaResult), which it writes around its messages' own encoding
// (message.Message.AppendJSON): the messages are most of a response, and
// json.Marshal would scan each message's bytes again to compact them. The
// bytes are json.Marshal's (TestMarshalRunIsJSONMarshal), and what
// writeParts writes.
func marshal(v any) ([]byte, error) {
	p, ok, err := runParts(v)
	switch {
	case !ok:
		return json.Marshal(v)
	case err != nil:
		return nil, err
	}
	return p.appendTo(make([]byte, 0, len(p.head)+len(p.tail)+256*len(p.msgs)+32))
}
