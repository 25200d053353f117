package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// Schemas keeps the canonical encoding of the tool schemas a provider has
// sent, keyed by their text: the same few tools go out with every call, and
// decoding and re-encoding each schema every time cost 5 % of the server's
// CPU per round trip. It is bounded (MaxSchemas), since per-run tools come
// from clients. The zero value is ready; it is safe for concurrent use.
type Schemas struct {
	m sync.Map // string(raw) → json.RawMessage
	n atomic.Int64
}

// MaxSchemas bounds a Schemas; schemas past it are encoded per call.
const MaxSchemas = 1024

// Canonical is a tool's parameters as sent: the schema with its keys sorted
// and its numbers as written (no float64 round trip of, say, a maximum of
// 2^63-1); sdk.EmptyObjectSchema for none. Anything but a JSON object is an
// error.
func (c *Schemas) Canonical(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = sdk.EmptyObjectSchema
	}
	if v, ok := c.m.Load(string(raw)); ok {
		return v.(json.RawMessage), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var schema map[string]any
	if err := dec.Decode(&schema); err != nil || schema == nil {
		return nil, errors.New("parameters are not a JSON object")
	}
	params, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	if c.n.Load() < MaxSchemas {
		if _, loaded := c.m.LoadOrStore(string(raw), json.RawMessage(params)); !loaded {
			c.n.Add(1)
		}
	}
	return params, nil
}

// Len is how many schemas c keeps.
func (c *Schemas) Len() int { return int(c.n.Load()) }
