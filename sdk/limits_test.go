package sdk_test

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tenxgraph/tenxgraph/sdk"
	pb "github.com/tenxgraph/tenxgraph/sdk/proto/toolprovider/v1"
)

// MessageBytes(n) is exactly the largest message carrying n bytes: each
// message a plugin sends with n bytes of content, every other field at its
// largest, fits, and the largest of them fills it. The sizes cross each
// length prefix's step (127/128, 16383/16384, ...).
func TestMessageBytes(t *testing.T) {
	for _, n := range []int{0, 1, 100, 127, 128, 16383, 16384, 2097151, 2097152, 4 << 20} {
		content := strings.Repeat("x", n)
		progress := &pb.CallTool_Progress{Progress: math.MaxFloat64, Total: math.MaxFloat64, Message: content}
		response := &pb.CallTool_Response{ContentJson: []byte(content), IsError: true, Deferred: true}
		msgs := map[string]proto.Message{
			"CallTool.Response":        response,
			"CallTool.Event(progress)": &pb.CallTool_Event{Event: &pb.CallTool_Event_Progress{Progress: progress}},
			"CallTool.Event(response)": &pb.CallTool_Event{Event: &pb.CallTool_Event_Response{Response: response}},
			"Watch.Event":              &pb.Watch_Event{ToolsChanged: true, ProgressToken: math.MaxUint64, Progress: progress},
		}
		limit, largest := sdk.MessageBytes(n), 0
		for name, m := range msgs {
			size := proto.Size(m)
			if size > limit {
				t.Errorf("n=%d: %s is %d bytes, over MessageBytes %d", n, name, size, limit)
			}
			largest = max(largest, size)
		}
		if largest != limit && n > 0 { // proto3 leaves an empty field out
			t.Errorf("n=%d: the largest message is %d bytes, MessageBytes says %d", n, largest, limit)
		}
	}
}
