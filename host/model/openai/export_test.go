package openai

import "github.com/tenxgraph/tenxgraph/host/model"

// DefaultTransport is the transport of a Model whose Config brings no
// client, for the tests of connection reuse and HTTP/2.
var DefaultTransport = model.DefaultTransport
