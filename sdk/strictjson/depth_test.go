package strictjson_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// nest is v inside n arrays.
func nest(n int, v string) string {
	return strings.Repeat("[", n) + v + strings.Repeat("]", n)
}

// Nesting up to MaxDepth decodes; one level more is refused with
// ErrMaxDepth, the limit and the path of the value that goes too deep,
// whatever the rest of the text holds.
func TestMaxDepth(t *testing.T) {
	const max = strictjson.MaxDepth
	deepPath := strings.Repeat("[0]", max-5) // 5 levels are the envelope's
	for _, c := range []struct {
		name, in, path string
	}{
		{"arrays", nest(max+1, "1"), strings.Repeat("[0]", max)},
		{"10,001 arrays", nest(10_001, ""), strings.Repeat("[0]", max)},
		{"unterminated", strings.Repeat("[", 10_001), strings.Repeat("[0]", max)},
		{"objects", strings.Repeat(`{"a":`, max+1) + "1" + strings.Repeat("}", max+1), strings.Repeat("a.", max-1) + "a"},
		{"under keys and indexes", `{"x": 1, "input": {"messages": [{"role": "user"}, {"content": [0, 1, ` + nest(max-2, "") + `]}]}}`,
			"input.messages[1].content[2]" + deepPath},
		{"a key that needs quoting", `{"a b": ` + nest(max, "") + `}`, `["a b"]` + strings.Repeat("[0]", max-1)},
		{"an escaped key", `{"q\"\\": ` + nest(max, "") + `}`, `["q\"\\"]` + strings.Repeat("[0]", max-1)},
	} {
		var v any
		err := strictjson.Unmarshal([]byte(c.in), &v)
		var se *strictjson.Error
		if !errors.As(err, &se) || !errors.Is(err, strictjson.ErrMaxDepth) {
			t.Errorf("%s: got %v, want an *Error wrapping ErrMaxDepth", c.name, err)
			continue
		}
		if se.Path != c.path {
			t.Errorf("%s: path\n got %s\nwant %s", c.name, se.Path, c.path)
		}
		for _, w := range []string{"invalid JSON at byte", "exceeded max depth", "at most 128 deep"} {
			if !strings.Contains(se.Msg, w) {
				t.Errorf("%s: %q does not say %q", c.name, se.Msg, w)
			}
		}
		if err := strictjson.Check([]byte(c.in)); !errors.Is(err, strictjson.ErrMaxDepth) {
			t.Errorf("%s: Check: %v, want ErrMaxDepth", c.name, err)
		}
	}

	for _, in := range []string{
		nest(max, "1"),
		strings.Repeat(`{"a":`, max) + "1" + strings.Repeat("}", max),
		// Brackets and escaped quotes inside strings are not structure.
		nest(max, `"[[[[{{{{ \" [[[ \\"`),
		`{"k[": ` + nest(max-1, `"\\\"[[["`) + `}`,
		`[` + strings.Repeat(`"[", `, 1000) + nest(max-1, "") + `]`,
	} {
		var v any
		if err := strictjson.Unmarshal([]byte(in), &v); err != nil {
			t.Errorf("%.40s…: %v", in, err)
		}
	}
}

// A refused text costs a fixed number of allocations, however deep it
// goes or long it is: the check keeps a fixed stack and builds one path.
// (The decoder's error path, which looked up the path at each token,
// made a hundred thousand for a 200 KB text.)
func TestMaxDepthAllocations(t *testing.T) {
	var counts []float64
	for _, n := range []int{1_000, 100_000} {
		in := []byte(nest(n, ""))
		var v any
		counts = append(counts, testing.AllocsPerRun(5, func() { _ = strictjson.Unmarshal(in, &v) }))
	}
	if max(counts[0], counts[1]) > 16 {
		t.Errorf("allocations refusing 1,000 and 100,000 levels: %v, want a few for either", counts)
	}
}
