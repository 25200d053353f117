package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
)

const currentTimeDescription = `Get the current date and time, in UTC or in a given time zone. ` +
	`Use it whenever the answer depends on today's date or the time of day: models do not know the current time. ` +
	`Returns the zone, the local time as RFC 3339 (its offset shows the zone's current UTC offset, daylight saving included), Unix seconds and the weekday.`

var currentTimeSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "timezone": {
      "type": "string",
      "description": "An IANA time zone name such as \"Asia/Tokyo\", \"Europe/Paris\" or \"America/New_York\" (a city name alone is not enough). Omit it, or pass \"UTC\", for UTC."
    }
  },
  "additionalProperties": false
}`)

type currentTimeResult struct {
	Timezone string `json:"timezone"`
	Time     string `json:"time"`
	Unix     int64  `json:"unix"`
	Weekday  string `json:"weekday"`
}

// currentTimeTool takes its clock as an argument so tests can fix the time.
func currentTimeTool(now func() time.Time) sdk.Tool {
	return sdk.Func("current_time", currentTimeDescription, currentTimeSchema, func(ctx context.Context, raw json.RawMessage) (any, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var args struct {
			Timezone string `json:"timezone"`
		}
		if err := decodeArgs(raw, &args); err != nil {
			return nil, err
		}
		loc, err := loadZone(args.Timezone)
		if err != nil {
			return nil, err
		}
		t := now().In(loc)
		return currentTimeResult{
			Timezone: loc.String(),
			Time:     t.Format(time.RFC3339),
			Unix:     t.Unix(),
			Weekday:  t.Weekday().String(),
		}, nil
	})
}

func loadZone(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return time.UTC, nil
	}
	// "Local" is the host machine's zone, which says nothing about the user;
	// refusing it keeps the server's setup out of the answers.
	if strings.EqualFold(name, "local") {
		return nil, fmt.Errorf(`time zone "Local" is not accepted: pass the user's IANA zone name, such as "Europe/Paris", or "UTC"`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf(`unknown time zone %q: pass an IANA zone name such as "Asia/Tokyo", "Europe/Paris", "America/New_York" or "UTC"`, name)
	}
	return loc, nil
}
