// Command testplugin is a tool provider built with the SDK for the plugin
// host's tests. It misbehaves on purpose: it prints to stdout before and
// after the handshake, and has tools that sleep, report their deadline,
// start a child process and write to stdout mid-call.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
)

func main() {
	fmt.Print("noise before serve, no newline ")
	fmt.Println("and a line")
	fmt.Println("another line before serve")
	sdk.Serve(sdk.MustTools("testplugin", "0.1.0",
		sdk.Func("echo", "Echo text.", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
			func(ctx context.Context, args json.RawMessage) (any, error) {
				var in struct{ Text string }
				_ = json.Unmarshal(args, &in)
				return map[string]any{"text": in.Text, "pid": os.Getpid()}, nil
			}),
		sdk.Func("sleep", "Sleep, honouring cancellation unless told to ignore it, reporting progress every every_ms when set.",
			json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"},"tag":{"type":"string"},"ignore_cancel":{"type":"boolean"},"every_ms":{"type":"integer"}}}`),
			func(ctx context.Context, args json.RawMessage) (any, error) {
				var in struct {
					MS           int
					Tag          string
					IgnoreCancel bool `json:"ignore_cancel"`
					EveryMS      int  `json:"every_ms"`
				}
				_ = json.Unmarshal(args, &in)
				mark("started " + in.Tag)
				end := time.After(time.Duration(in.MS) * time.Millisecond)
				var tick <-chan time.Time
				if in.EveryMS > 0 {
					t := time.NewTicker(time.Duration(in.EveryMS) * time.Millisecond)
					defer t.Stop()
					tick = t.C
				}
				done := ctx.Done()
				if in.IgnoreCancel {
					done = nil
				}
				for n := 1; ; n++ {
					select {
					case <-end:
						return "slept " + in.Tag, nil
					case <-tick:
						sdk.ReportProgress(ctx, float64(n), 0, "still sleeping")
					case <-done:
						mark("cancelled " + in.Tag + ": " + ctx.Err().Error())
						return nil, ctx.Err()
					}
				}
			}),
		sdk.Func("deadline", "Report the time left before the call's deadline.", nil,
			func(ctx context.Context, _ json.RawMessage) (any, error) {
				d, ok := ctx.Deadline()
				if !ok {
					return -1, nil
				}
				return time.Until(d).Milliseconds(), nil
			}),
		sdk.Func("spawn_child", "Start a long-lived child process.", nil,
			func(ctx context.Context, _ json.RawMessage) (any, error) {
				cmd := exec.Command("sleep", "600")
				if err := cmd.Start(); err != nil {
					return nil, err
				}
				go cmd.Wait()
				return cmd.Process.Pid, nil
			}),
		sdk.Func("noisy", "Write to stdout and stderr mid-call.", nil,
			func(ctx context.Context, _ json.RawMessage) (any, error) {
				fmt.Println("noise during a call")
				fmt.Fprintln(os.Stderr, "stderr noise during a call")
				return "ok", nil
			}),
		sdk.Func("big", "Return a large string, and attachments of attachment_bytes each if asked, with the longest names the host takes if long_names.",
			json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer"},"attachments":{"type":"integer"},"attachment_bytes":{"type":"integer"},"long_names":{"type":"boolean"}}}`),
			func(ctx context.Context, args json.RawMessage) (any, error) {
				var in struct {
					Bytes           int
					Attachments     int
					AttachmentBytes int  `json:"attachment_bytes"`
					LongNames       bool `json:"long_names"`
				}
				_ = json.Unmarshal(args, &in)
				b := make([]byte, in.Bytes)
				for i := range b {
					b[i] = 'x'
				}
				if in.Attachments == 0 {
					return string(b), nil
				}
				mimeType, filename := "application/octet-stream", "big.bin"
				if in.LongNames {
					mimeType = "application/" + strings.Repeat("x", sdk.MaxMimeTypeBytes-len("application/"))
					filename = strings.Repeat("f", sdk.MaxFilenameBytes)
				}
				data := make([]byte, in.AttachmentBytes)
				for i := range data {
					data[i] = 'y'
				}
				atts := make([]sdk.Attachment, in.Attachments)
				for i := range atts {
					atts[i] = sdk.File(mimeType, filename, data)
				}
				return sdk.ToolResult{Content: string(b), Attachments: atts}, nil
			}),
	))
}

// mark appends a line to the file named by TESTPLUGIN_MARKS, so tests can
// see what the handler saw.
func mark(line string) {
	path := os.Getenv("TESTPLUGIN_MARKS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}
