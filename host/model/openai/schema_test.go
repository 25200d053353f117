package openai

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// The schema cache answers like a fresh encoding, for schemas it keeps and
// for those past its bound, and never holds more than its bound.
func TestSchemaCacheBounded(t *testing.T) {
	var c schemaCache
	for i := range maxSchemas + 10 {
		raw := fmt.Sprintf(`{"type":"object","properties":{"n":{"type":"integer","maximum":%d}}}`, 9007199254740993+i)
		for range 2 {
			tools, err := c.chatTools([]sdk.ToolSpec{{Name: "t", Parameters: json.RawMessage(raw)}})
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf(`{"properties":{"n":{"maximum":%d,"type":"integer"}},"type":"object"}`, 9007199254740993+i)
			if got := string(tools[0].Function.Parameters); got != want {
				t.Fatalf("schema %d sent as %s, want %s", i, got, want)
			}
		}
	}
	if n := c.n.Load(); n != maxSchemas {
		t.Fatalf("the cache holds %d schemas, want its bound %d", n, maxSchemas)
	}
	if _, err := c.chatTools([]sdk.ToolSpec{{Name: "bad", Parameters: json.RawMessage(`[1]`)}}); err == nil {
		t.Fatal("a schema that is not an object was accepted")
	}
}
