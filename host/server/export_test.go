package server

import (
	"context"
	"io"
	"net/http/httptest"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
	aguisse "github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/encoding/sse"

	"github.com/tenxgraph/tenxgraph/host/graph"
)

// AGUIStream writes the AG-UI events for a run's graph events, as the
// endpoint does, and returns the stream: for tests of event orders a
// scripted model cannot produce (text and tool calls in one message).
func AGUIStream(threadID, runID string, interrupts bool, evs []graph.Event, fail error) []byte {
	rec := httptest.NewRecorder()
	a := &aguiRun{w: rec, ctx: context.Background(), in: types.RunAgentInput{ThreadID: threadID, RunID: runID},
		sse: aguisse.NewSSEWriter(), interrupts: interrupts}
	for _, ev := range evs {
		a.event(ev)
	}
	if fail != nil {
		a.fail(fail)
	}
	return rec.Body.Bytes()
}

// ErrorStatus is the status and body the API answers for err.
func ErrorStatus(err error) (int, ErrorBody) { return errorBody(err) }

// SetTimeouts gives a server test-sized timeouts; call it before Serve.
func (s *Server) SetTimeouts(readHeader, write time.Duration) {
	s.http.ReadHeaderTimeout = readHeader
	s.http.WriteTimeout = write
	s.writeTimeout = write
}

// Marshal is what the server encodes a response or an event with.
var Marshal = marshal

// APIRoutes lists the patterns of the API's routes (those under /v1/).
func (s *Server) APIRoutes() []string { return s.api }

// SetBodyPace gives a server a test-sized body pace (BodyGrace,
// MinBodyRate); call it before Serve.
func (s *Server) SetBodyPace(grace time.Duration, rate int64) {
	s.bodyGrace, s.bodyRate = grace, rate
}

// WriteResult writes a run's response as the invoke route does, its
// messages from the shared encodings.
func WriteResult(w io.Writer, v any) error {
	p, _, err := runParts(v)
	if err != nil {
		return err
	}
	return p.writeTo(w, "", "\n")
}

// SharedEncodings is how many message encodings responses share now, and
// their bytes.
func SharedEncodings() (n, bytes int) { return shared.held() }
