package sdk_test

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tenxgraph/tenxgraph/sdk"
	pb "github.com/tenxgraph/tenxgraph/sdk/proto/toolprovider/v1"
)

// MessageBytes(n) bounds every message carrying n bytes, tightly: each
// message a plugin sends with n bytes of content (or of content and
// attachments' data together), every other field at its largest and as
// many attachments as n bytes can carry, fits; and the largest of them is
// within a few bytes per attachment of the bound. The sizes cross each
// length prefix's step (127/128, 16383/16384, ...) and the attachments'
// limit (100/101).
func TestMessageBytes(t *testing.T) {
	names := func(n int) string { return strings.Repeat("n", n) }
	for _, n := range []int{0, 1, 2, 99, 100, 101, 127, 128, 16383, 16384, 2097151, 2097152, 4 << 20} {
		content := strings.Repeat("x", n)
		progress := &pb.CallTool_Progress{Progress: math.MaxFloat64, Total: math.MaxFloat64, Message: content}
		spans := make([]byte, sdk.MaxSpanBytes) // the most spans a result carries
		response := &pb.CallTool_Response{ContentJson: []byte(content), IsError: true, Deferred: true, Spans: spans}
		// The most attachments n bytes can carry, with the longest names:
		// their data split evenly, the content empty; or one byte each,
		// the content the rest.
		k := min(n, sdk.MaxAttachments)
		even := &pb.CallTool_Response{IsError: true, Deferred: true, Spans: spans}
		ones := &pb.CallTool_Response{ContentJson: []byte(content[k:]), IsError: true, Deferred: true, Spans: spans}
		for i := range k {
			size := n / k
			if i == 0 {
				size += n % k
			}
			even.Attachments = append(even.Attachments, &pb.CallTool_Attachment{
				MimeType: names(sdk.MaxMimeTypeBytes), Filename: names(sdk.MaxFilenameBytes), Data: []byte(content[:size])})
			ones.Attachments = append(ones.Attachments, &pb.CallTool_Attachment{
				MimeType: names(sdk.MaxMimeTypeBytes), Filename: names(sdk.MaxFilenameBytes), Data: []byte("x")})
		}
		plain := map[string]proto.Message{
			"CallTool.Response":        response,
			"CallTool.Event(progress)": &pb.CallTool_Event{Event: &pb.CallTool_Event_Progress{Progress: progress}},
			"CallTool.Event(response)": &pb.CallTool_Event{Event: &pb.CallTool_Event_Response{Response: response}},
			"Watch.Event":              &pb.Watch_Event{ToolsChanged: true, ProgressToken: math.MaxUint64, Progress: progress},
		}
		attached := map[string]proto.Message{
			"CallTool.Response(even attachments)":            even,
			"CallTool.Response(one-byte attachments)":        ones,
			"CallTool.Event(response, even attachments)":     &pb.CallTool_Event{Event: &pb.CallTool_Event_Response{Response: even}},
			"CallTool.Event(response, one-byte attachments)": &pb.CallTool_Event{Event: &pb.CallTool_Event_Response{Response: ones}},
		}
		limit := sdk.MessageBytes(n)
		largest := 0
		for _, msgs := range []map[string]proto.Message{plain, attached} {
			for name, m := range msgs {
				size := proto.Size(m)
				if size > limit {
					t.Errorf("n=%d: %s is %d bytes, over MessageBytes %d", n, name, size, limit)
				}
				largest = max(largest, size)
			}
		}
		// Each attachment's two length prefixes may be a byte shorter than
		// the bound takes them to be (its data is less than n), and an
		// empty content has no field (its tag and length prefix).
		if slack := 2*k + 1 + protowire.SizeVarint(uint64(n)); limit-largest > slack {
			t.Errorf("n=%d: the largest message is %d bytes, %d under MessageBytes %d: the bound is looser than the %d bytes it may be", n, largest, limit-largest, limit, slack)
		}
	}
}
