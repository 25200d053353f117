package pluginhost

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// goPluginTimeLayout is the one @timestamp form go-plugin's client reads;
// a line with any other is logged raw, at debug level.
const goPluginTimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// timeLayouts are the @timestamp forms a plugin may write: RFC 3339 with
// any fraction of a second (…Z, …+00:00), and the offset without its colon
// (…+0000), which is what C's and Python's strftime %z give.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700"}

// levelNames maps the level names of other languages' loggers to hclog's.
var levelNames = map[string]string{"warning": "warn", "critical": "error", "fatal": "error"}

// logLine rewrites one line a plugin wrote on stderr into what go-plugin's
// client files at its level: a JSON log line keeps its fields, with its
// @timestamp in go-plugin's form and its level under hclog's name. It also
// keeps go-plugin from crashing the host: go-plugin asserts that @message,
// @level and @timestamp are strings, so any other value is turned into its
// JSON text. A line that is not a JSON object passes unchanged; go-plugin
// logs it raw.
func logLine(line []byte) []byte {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return line
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(trimmed, &fields) != nil {
		return line
	}
	changed := false
	set := func(key, value string) {
		raw, _ := json.Marshal(value) // a string always encodes
		fields[key], changed = raw, true
	}
	text := func(key string) (string, bool) {
		raw, ok := fields[key]
		if !ok {
			return "", false
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			set(key, string(raw)) // not a string: go-plugin would panic on it
			return string(raw), false
		}
		return s, true
	}
	text("@message")
	if level, ok := text("@level"); ok {
		if name, ok := levelNames[strings.ToLower(strings.TrimSpace(level))]; ok {
			set("@level", name)
		}
	}
	if ts, ok := text("@timestamp"); ok {
		if _, err := time.Parse(goPluginTimeLayout, ts); err != nil {
			for _, layout := range timeLayouts {
				if t, err := time.Parse(layout, ts); err == nil {
					set("@timestamp", t.Format(goPluginTimeLayout))
					break
				}
			}
		}
	}
	if !changed {
		return line
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return line
	}
	return out
}
