package strictjson_test

import (
	"testing"

	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

func TestClosest(t *testing.T) {
	names := []string{"max_bytes", "units", "timeout", "url"}
	for key, want := range map[string]string{
		"maxBytes":  "max_bytes", // another spelling style
		"MAX-BYTES": "max_bytes",
		"unit":      "units", // one edit
		"timout":    "timeout",
		"tiemuot":   "",    // too far
		"x":         "",    // one letter is not a misspelling of anything
		"uri":       "url", // one edit, but the key is longer than the distance
	} {
		if got := strictjson.Closest(key, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", key, got, want)
		}
	}
}
