package sdk

import (
	"bytes"

	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// UnmarshalStrict decodes one JSON value into v under the rules of package
// strictjson: unknown, repeated and wrong-case keys, invalid UTF-8 and
// trailing data are errors naming their JSON path, so a misspelt option is
// an error, not a silently unused default. Empty input leaves v as it is.
func UnmarshalStrict(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	return strictjson.Unmarshal(raw, v)
}
