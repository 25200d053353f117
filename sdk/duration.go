package sdk

import (
	"fmt"
	"time"
)

// Duration is a time.Duration that travels in JSON as a Go duration string
// such as "30s", "1m30s" or "500ms", the way the config file spells it.
// Options a host sends its plugins use it for their timeouts: JSON has no
// duration, and a bare number is refused rather than guessed at, since
// tools in the wild read 30 as seconds, milliseconds or nanoseconds.
type Duration time.Duration

// DurationPattern is the JSON Schema pattern of a Duration's text: what
// time.ParseDuration takes, without a sign. A schema derived from a
// struct (typed tool arguments and options) gives a Duration field a
// string of this pattern, not the integer its Go kind would make it.
const DurationPattern = `^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`

// String is the duration as time.Duration writes it ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the duration as a Go duration string, which
// UnmarshalText reads back exactly.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a Go duration string. A negative one is an error: a
// timeout or a wait cannot be shorter than none.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a duration: use a number with a unit, such as \"30s\", \"1m30s\" or \"500ms\"", text)
	case v < 0:
		return fmt.Errorf("must not be negative, got %q", text)
	}
	*d = Duration(v)
	return nil
}
