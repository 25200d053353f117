package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// attachTools return images as attachments: a real PNG (4x3, one red
// pixel at 1,2), as many times and under whatever name the caller asks,
// whatever the host accepts.
func attachTools() []sdk.Tool {
	return []sdk.Tool{{
		Spec: sdk.ToolSpec{Name: "image", Description: "Returns n PNG images (4x3) named filename, beside a caption.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"filename":{"type":"string"}}}`)},
		// A handler of its own, past sdk.Result's check: the host must
		// refuse what it would.
		Handler: sdk.HandlerFunc(func(_ context.Context, req sdk.CallToolRequest) (sdk.CallToolResponse, error) {
			var in struct {
				N        int    `json:"n"`
				Filename string `json:"filename"`
			}
			if err := json.Unmarshal(req.Arguments, &in); err != nil {
				return sdk.CallToolResponse{}, err
			}
			img := image.NewRGBA(image.Rect(0, 0, 4, 3))
			img.Set(1, 2, color.RGBA{R: 255, A: 255})
			var buf bytes.Buffer
			if err := png.Encode(&buf, img); err != nil {
				return sdk.CallToolResponse{}, err
			}
			atts := make([]sdk.Attachment, max(in.N, 1))
			for i := range atts {
				atts[i] = sdk.File("image/png", in.Filename, buf.Bytes())
			}
			return sdk.CallToolResponse{Content: []byte(`"a red dot"`), Attachments: atts}, nil
		}),
	}}
}
