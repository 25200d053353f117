package builtin

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
)

func TestOptionsJSON(t *testing.T) {
	o := Options{
		Enable:        []string{"http_fetch", "read_file"},
		HTTPFetch:     HTTPFetchOptions{AllowedHosts: []string{"api.example.com", "*.example.org"}, MaxBytes: 2048, Timeout: sdk.Duration(1500 * time.Millisecond)},
		WorkspaceRoot: "/srv/ws",
	}
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"enable":["http_fetch","read_file"],"http_fetch":{"allow_hosts":["api.example.com","*.example.org"],"max_bytes":2048,"timeout":"1.5s"},"workspace_root":"/srv/ws"}`
	if string(raw) != want {
		t.Errorf("JSON\n got %s\nwant %s", raw, want)
	}
	back, err := ParseOptions(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, o) {
		t.Errorf("round trip: got %+v, want %+v", back, o)
	}

	if raw, _ := json.Marshal(Options{}); string(raw) != `{}` {
		t.Errorf("zero options encode as %s, want {}", raw)
	}
	// A positive timeout never rounds down to "the default".
	raw, _ = json.Marshal(HTTPFetchOptions{Timeout: sdk.Duration(time.Microsecond)})
	if string(raw) != `{"timeout":"1µs"}` {
		t.Errorf("1µs timeout encodes as %s", raw)
	}
}

func TestParseOptionsErrors(t *testing.T) {
	cases := map[string]string{
		`{"enable": "calculator"}`:                     "enable: must be an array, got string",
		`{"http_fetch": {"allowed_hosts": ["a.com"]}}`: "http_fetch.allowed_hosts: unknown key",
		`{"workspace": "/x"}`:                          "workspace: unknown key",
		`{"http_fetch": {"timeout": 10000}}`:           "http_fetch.timeout: must be a string, got number",
		`{"http_fetch": {"timeout": "10"}}`:            `http_fetch.timeout: "10" is not a duration: use a number with a unit, such as "30s"`,
		`{"http_fetch": {"timeout": "-10s"}}`:          `http_fetch.timeout: must not be negative, got "-10s"`,
		`{"http_fetch": {"timeout_ms": 10000}}`:        "http_fetch.timeout_ms: unknown key",
		`{"enable": [], "enable": ["http_fetch"]}`:     "enable: duplicate key",
		`{"Enable": ["calculator"]}`:                   `Enable: unknown key (keys are case-sensitive: did you mean "enable"?)`,
		`{"http_fetch": {"Max_Bytes": 1}}`:             `http_fetch.Max_Bytes: unknown key (keys are case-sensitive: did you mean "max_bytes"?)`,
		`{"http_fetch": {"timeout": "2562048h"}}`:      `http_fetch.timeout: "2562048h" is not a duration`,
		`{} {}`:     "unexpected data after the JSON value",
		`{"enable"`: "the text ends before the JSON value does",
	}
	for in, want := range cases {
		_, err := ParseOptions([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseOptions(%s) = %v, want an error containing %q", in, err, want)
		}
	}
}

// What a host sends with Configure (Options as JSON) is what the provider
// reads back.
func TestOptionsConfigureRoundTrip(t *testing.T) {
	o, err := ParseOptions([]byte(`{"enable":["http_fetch"],"http_fetch":{"allow_hosts":["a.example"],"timeout":"250ms"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Options{Enable: []string{"http_fetch"}, HTTPFetch: HTTPFetchOptions{AllowedHosts: []string{"a.example"}, Timeout: sdk.Duration(250 * time.Millisecond)}}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("got %+v, want %+v", o, want)
	}
	o = Options{Enable: []string{"list_files"}, WorkspaceRoot: "/tmp/ws", HTTPFetch: HTTPFetchOptions{MaxBytes: 7}}
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseOptions(raw)
	if err != nil || !reflect.DeepEqual(back, o) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}
