// Command weather is a tool provider plugin for tenxgraph: it tells a model
// the current weather and the forecast for a city, from Open-Meteo
// (https://open-meteo.com), which needs no API key.
//
// It is the example to copy. main calls sdk.Serve; each tool is a plain Go
// function whose argument struct is the tool's schema; main_test.go tests
// the provider in process and as a real plugin against a fake weather
// service. See docs/plugins.md for building, pinning and configuring it.
//
// Options (under the plugin's "options" in 10xgraph.json, checked against
// the schema the plugin declares):
//
//	units  the units when a call names none: "metric" (default) or "imperial".
//
// Environment:
//
//	WEATHER_API_URL        the forecast service (default https://api.open-meteo.com).
//	                       When set, it serves geocoding too, so that one mirror or
//	                       test server is enough.
//	WEATHER_GEOCODING_URL  the geocoding service (default
//	                       https://geocoding-api.open-meteo.com, or WEATHER_API_URL).
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// version is what the host shows for this plugin; set it when building with
// -ldflags "-X main.version=1.2.3".
var version = "0.1.0"

func main() {
	// Nothing may be printed to stdout before Serve: stdout carries the
	// handshake with the host. Logs go to stderr (see sdk.WithLogger).
	sdk.Serve(configured(openMeteoFromEnv()))
}

// options are what 10xgraph.json may set under the plugin's "options". The
// struct is the options schema the plugin declares: `tenxgraph validate`
// checks the config against it, so "units": "kelvin" or a misspelt key is
// reported with its path before the plugin is configured.
type options struct {
	Units string `json:"units,omitempty" jsonschema:"the units when a call names none: metric (the default) or imperial"`
}

// configured serves the tools once the host has sent the options (an empty
// object when the config has none).
func configured(om *openMeteo) sdk.Provider {
	return sdk.MustConfigured(func(_ context.Context, o options) (sdk.Provider, error) {
		om.units = o.Units
		return newProvider(om), nil
	}, sdk.WithProperty("units", unitsSchema))
}

// newProvider lists the tools. It does no I/O: the host starts the plugin
// and waits for the handshake, so slow set-up belongs in the first call.
func newProvider(om *openMeteo) *sdk.Tools {
	return sdk.MustTools("weather", version,
		sdk.MustTool("current_weather",
			"Get the current weather in a city: temperature, wind speed and conditions.",
			om.currentWeather,
			sdk.WithProperty("units", unitsSchema)),
		sdk.MustTool("forecast",
			"Get the daily weather forecast for a city, from today up to 7 days ahead.",
			om.forecast,
			// What a Go int cannot say goes in the schema: the host then
			// refuses days: 10 with a message the model can act on, and the
			// function never sees it.
			sdk.WithProperty("days", `{"minimum": 1, "maximum": 7}`),
			sdk.WithProperty("units", unitsSchema)),
	)
}

const unitsSchema = `{"enum": ["metric", "imperial"]}`

// The arguments of a tool are a struct: each field is a property under its
// JSON name, the jsonschema tag is its description for the model, and a
// field without omitempty is required.

type currentArgs struct {
	City  string `json:"city" jsonschema:"the city, optionally followed by its region or country, such as Paris or Paris, Texas"`
	Units string `json:"units,omitempty" jsonschema:"metric (°C, km/h; the default) or imperial (°F, mph)"`
}

type forecastArgs struct {
	City  string `json:"city" jsonschema:"the city, optionally followed by its region or country, such as Paris or Paris, Texas"`
	Days  int    `json:"days" jsonschema:"how many days, today included: 1 to 7"`
	Units string `json:"units,omitempty" jsonschema:"metric (°C, mm; the default) or imperial (°F, inches)"`
}

// Current is the result of current_weather, as the model reads it.
type Current struct {
	Location        string   `json:"location"`
	Time            string   `json:"time,omitempty"` // local time at the location
	Conditions      string   `json:"conditions,omitempty"`
	Temperature     *float64 `json:"temperature,omitempty"`
	TemperatureUnit string   `json:"temperature_unit,omitempty"`
	WindSpeed       *float64 `json:"wind_speed,omitempty"`
	WindSpeedUnit   string   `json:"wind_speed_unit,omitempty"`
}

// Forecast is the result of forecast.
type Forecast struct {
	Location          string `json:"location"`
	TemperatureUnit   string `json:"temperature_unit,omitempty"`
	PrecipitationUnit string `json:"precipitation_unit,omitempty"`
	Days              []Day  `json:"days"`
}

// Day is one day of a forecast. A value the service did not give is left
// out rather than reported as zero.
type Day struct {
	Date           string   `json:"date"`
	Conditions     string   `json:"conditions,omitempty"`
	TemperatureMin *float64 `json:"temperature_min,omitempty"`
	TemperatureMax *float64 `json:"temperature_max,omitempty"`
	Precipitation  *float64 `json:"precipitation,omitempty"`
}

// currentWeather is the current_weather tool. An error it returns is shown
// to the model as the tool's result, so it says what went wrong in words
// the model can act on or pass on.
func (om *openMeteo) currentWeather(ctx context.Context, in currentArgs) (Current, error) {
	units, err := unitParams(cmp.Or(in.Units, om.units))
	if err != nil {
		return Current{}, err
	}
	pl, err := om.locate(ctx, in.City)
	if err != nil {
		return Current{}, err
	}
	fc, err := om.fetchForecast(ctx, pl, units, "current", "temperature_2m,wind_speed_10m,weather_code")
	if err != nil {
		return Current{}, err
	}
	if fc.Current == nil {
		return Current{}, errors.New("the weather service sent no current conditions; try again later")
	}
	return Current{
		Location:        pl.String(),
		Time:            fc.Current.Time,
		Conditions:      conditions(fc.Current.WeatherCode),
		Temperature:     fc.Current.Temperature,
		TemperatureUnit: fc.CurrentUnits.Temperature,
		WindSpeed:       fc.Current.WindSpeed,
		WindSpeedUnit:   fc.CurrentUnits.WindSpeed,
	}, nil
}

// forecast is the forecast tool.
func (om *openMeteo) forecast(ctx context.Context, in forecastArgs) (Forecast, error) {
	if in.Days < 1 || in.Days > 7 { // the host checks the schema; a direct caller may not
		return Forecast{}, fmt.Errorf("days must be from 1 to 7, got %d", in.Days)
	}
	units, err := unitParams(cmp.Or(in.Units, om.units))
	if err != nil {
		return Forecast{}, err
	}
	pl, err := om.locate(ctx, in.City)
	if err != nil {
		return Forecast{}, err
	}
	units.Set("forecast_days", fmt.Sprint(in.Days))
	fc, err := om.fetchForecast(ctx, pl, units, "daily", "weather_code,temperature_2m_min,temperature_2m_max,precipitation_sum")
	if err != nil {
		return Forecast{}, err
	}
	d := fc.Daily
	out := Forecast{
		Location:          pl.String(),
		TemperatureUnit:   fc.DailyUnits.TemperatureMax,
		PrecipitationUnit: fc.DailyUnits.Precipitation,
		Days:              make([]Day, 0, len(d.Time)),
	}
	for i, date := range d.Time {
		if i == in.Days {
			break
		}
		out.Days = append(out.Days, Day{
			Date:           date,
			Conditions:     conditions(at(d.WeatherCode, i)),
			TemperatureMin: at(d.TemperatureMin, i),
			TemperatureMax: at(d.TemperatureMax, i),
			Precipitation:  at(d.Precipitation, i),
		})
	}
	if len(out.Days) == 0 {
		return Forecast{}, errors.New("the weather service sent no forecast; try again later")
	}
	return out, nil
}

// at is s[i], or nil when the service sent a shorter list.
func at[T any](s []*T, i int) *T {
	if i < len(s) {
		return s[i]
	}
	return nil
}
