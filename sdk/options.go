package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// UnmarshalStrict decodes one JSON value into v, refusing unknown keys and
// trailing data: a misspelt option must be an error, not a silently unused
// default. Empty input leaves v as it is.
func UnmarshalStrict(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}
