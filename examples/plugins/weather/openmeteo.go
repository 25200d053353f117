package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// openMeteo is a small client for Open-Meteo's geocoding and forecast APIs.
// Its JSON shapes are decoded tolerantly: fields it does not use are
// ignored, and a value that is missing or null stays nil instead of
// failing the call.
type openMeteo struct {
	forecastURL  string // https://api.open-meteo.com
	geocodingURL string // https://geocoding-api.open-meteo.com
	client       *http.Client
	units        string // a call's units when it names none: the plugin's units option
}

// requestTimeout bounds one request to the service, whatever deadline the
// caller has: a tool that hangs on a stuck server holds the model's turn.
const requestTimeout = 10 * time.Second

// maxResponseBytes bounds what is read from the service; a forecast is a
// few kilobytes.
const maxResponseBytes = 1 << 20

func openMeteoFromEnv() *openMeteo {
	forecastURL := os.Getenv("WEATHER_API_URL")
	geocodingURL := os.Getenv("WEATHER_GEOCODING_URL")
	switch {
	case forecastURL == "":
		forecastURL = "https://api.open-meteo.com"
		if geocodingURL == "" {
			geocodingURL = "https://geocoding-api.open-meteo.com"
		}
	case geocodingURL == "":
		geocodingURL = forecastURL
	}
	return newOpenMeteo(forecastURL, geocodingURL)
}

func newOpenMeteo(forecastURL, geocodingURL string) *openMeteo {
	return &openMeteo{
		forecastURL:  strings.TrimRight(forecastURL, "/"),
		geocodingURL: strings.TrimRight(geocodingURL, "/"),
		client:       &http.Client{Timeout: requestTimeout},
	}
}

// place is one geocoding result.
type place struct {
	Name        string  `json:"name"`
	Latitude    float64 `json:"latitude"`
	Longitude   float64 `json:"longitude"`
	CountryCode string  `json:"country_code"`
	Country     string  `json:"country"`
	Admin1      string  `json:"admin1"` // state, region
}

// String names the place the way a person would: "Paris, Texas, United
// States".
func (p place) String() string {
	parts := []string{p.Name}
	for _, s := range []string{p.Admin1, p.Country} {
		if s != "" && s != parts[len(parts)-1] {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

// locate finds a city. "Paris, Texas" searches for Paris and keeps the
// result whose region, country or country code is Texas: the service
// matches names only.
func (om *openMeteo) locate(ctx context.Context, city string) (place, error) {
	name, within, _ := strings.Cut(city, ",")
	name, within = strings.TrimSpace(name), strings.TrimSpace(within)
	if name == "" {
		return place{}, errors.New("city is empty: give a city name, such as Paris")
	}
	var res struct {
		Results []place `json:"results"` // absent when nothing matches
	}
	q := url.Values{"name": {name}, "count": {"10"}, "language": {"en"}, "format": {"json"}}
	if err := om.get(ctx, om.geocodingURL+"/v1/search", q, &res); err != nil {
		return place{}, err
	}
	for _, p := range res.Results {
		if within == "" || strings.EqualFold(within, p.Admin1) || strings.EqualFold(within, p.Country) || strings.EqualFold(within, p.CountryCode) {
			return p, nil
		}
	}
	if within == "" || len(res.Results) == 0 {
		return place{}, fmt.Errorf("no place called %q was found; check the spelling or try a larger city nearby", name)
	}
	found := make([]string, len(res.Results))
	for i, p := range res.Results {
		found[i] = p.String()
	}
	return place{}, fmt.Errorf("no place called %q in %q was found; places with that name: %s", name, within, strings.Join(found, "; "))
}

// forecastResponse is the part of /v1/forecast's answer the tools use.
type forecastResponse struct {
	CurrentUnits struct {
		Temperature string `json:"temperature_2m"`
		WindSpeed   string `json:"wind_speed_10m"`
	} `json:"current_units"`
	Current *struct {
		Time        string   `json:"time"`
		Temperature *float64 `json:"temperature_2m"`
		WindSpeed   *float64 `json:"wind_speed_10m"`
		WeatherCode *int     `json:"weather_code"`
	} `json:"current"`
	DailyUnits struct {
		TemperatureMax string `json:"temperature_2m_max"`
		Precipitation  string `json:"precipitation_sum"`
	} `json:"daily_units"`
	Daily struct {
		Time           []string   `json:"time"`
		WeatherCode    []*int     `json:"weather_code"`
		TemperatureMin []*float64 `json:"temperature_2m_min"`
		TemperatureMax []*float64 `json:"temperature_2m_max"`
		Precipitation  []*float64 `json:"precipitation_sum"`
	} `json:"daily"`
}

// fetchForecast asks for the variables of one block ("current" or "daily")
// at a place, in the place's own time zone.
func (om *openMeteo) fetchForecast(ctx context.Context, p place, q url.Values, block, variables string) (*forecastResponse, error) {
	q.Set("latitude", strconv.FormatFloat(p.Latitude, 'f', -1, 64))
	q.Set("longitude", strconv.FormatFloat(p.Longitude, 'f', -1, 64))
	q.Set(block, variables)
	q.Set("timezone", "auto")
	var fc forecastResponse
	if err := om.get(ctx, om.forecastURL+"/v1/forecast", q, &fc); err != nil {
		return nil, err
	}
	return &fc, nil
}

// unitParams turns the units argument into the service's parameters.
func unitParams(units string) (url.Values, error) {
	switch units {
	case "", "metric":
		return url.Values{}, nil // the service's defaults: °C, km/h, mm
	case "imperial":
		return url.Values{"temperature_unit": {"fahrenheit"}, "wind_speed_unit": {"mph"}, "precipitation_unit": {"inch"}}, nil
	}
	return nil, fmt.Errorf(`units must be "metric" or "imperial", got %q`, units)
}

// get fetches endpoint?q and decodes its JSON into v. Its errors are
// written for the model: what failed, and whether trying again may help.
func (om *openMeteo) get(ctx context.Context, endpoint string, q url.Values, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("the weather service address is not valid (check WEATHER_API_URL): %v", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := om.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // the host gave up on the call; nobody reads this result
		}
		var uerr *url.Error
		if errors.As(err, &uerr) && uerr.Timeout() {
			return errors.New("the weather service did not answer in time; try again later")
		}
		return fmt.Errorf("the weather service could not be reached; try again later (%v)", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("reading the weather service's answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		// Open-Meteo explains a refused request as {"error": true, "reason": "..."}.
		var e struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(body, &e) == nil && e.Reason != "" {
			return fmt.Errorf("the weather service refused the request: %s", e.Reason)
		}
		return fmt.Errorf("the weather service failed (HTTP %d); try again later", resp.StatusCode)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the weather service sent an answer that could not be read: %v", err)
	}
	return nil
}

// conditions describes a WMO weather code, which Open-Meteo uses.
func conditions(code *int) string {
	if code == nil {
		return ""
	}
	if s, ok := wmoCodes[*code]; ok {
		return s
	}
	return fmt.Sprintf("unknown (WMO code %d)", *code)
}

var wmoCodes = map[int]string{
	0: "clear sky", 1: "mainly clear", 2: "partly cloudy", 3: "overcast",
	45: "fog", 48: "depositing rime fog",
	51: "light drizzle", 53: "moderate drizzle", 55: "dense drizzle",
	56: "light freezing drizzle", 57: "dense freezing drizzle",
	61: "slight rain", 63: "moderate rain", 65: "heavy rain",
	66: "light freezing rain", 67: "heavy freezing rain",
	71: "slight snowfall", 73: "moderate snowfall", 75: "heavy snowfall", 77: "snow grains",
	80: "slight rain showers", 81: "moderate rain showers", 82: "violent rain showers",
	85: "slight snow showers", 86: "heavy snow showers",
	95: "thunderstorm", 96: "thunderstorm with slight hail", 99: "thunderstorm with heavy hail",
}
