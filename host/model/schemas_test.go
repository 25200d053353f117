package model

import (
	"encoding/json"
	"fmt"
	"testing"
)

// The schema cache answers like a fresh encoding, for schemas it keeps and
// for those past its bound, and never holds more than its bound.
func TestSchemasBounded(t *testing.T) {
	var c Schemas
	for i := range MaxSchemas + 10 {
		raw := fmt.Sprintf(`{"type":"object","properties":{"n":{"type":"integer","maximum":%d}}}`, 9007199254740993+i)
		for range 2 {
			got, err := c.Canonical(json.RawMessage(raw))
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf(`{"properties":{"n":{"maximum":%d,"type":"integer"}},"type":"object"}`, 9007199254740993+i)
			if string(got) != want {
				t.Fatalf("schema %d sent as %s, want %s", i, got, want)
			}
		}
	}
	if n := c.Len(); n != MaxSchemas {
		t.Fatalf("the cache holds %d schemas, want its bound %d", n, MaxSchemas)
	}
	if _, err := c.Canonical(json.RawMessage(`[1]`)); err == nil {
		t.Fatal("a schema that is not an object was accepted")
	}
	if got, err := c.Canonical(nil); err != nil || string(got) != `{"properties":{},"type":"object"}` {
		t.Fatalf("no schema: %s %v", got, err)
	}
}
