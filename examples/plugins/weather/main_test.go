package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/sdktest"
)

// fakeOpenMeteo serves the two endpoints the plugin uses, with Open-Meteo's
// JSON shapes, for a few places. Some places misbehave on purpose.
func fakeOpenMeteo(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/search", func(w http.ResponseWriter, r *http.Request) {
		switch strings.ToLower(r.URL.Query().Get("name")) { // the service ignores case
		case "berlin":
			fmt.Fprint(w, `{"results":[{"id":2950159,"name":"Berlin","latitude":52.52437,"longitude":13.41053,"elevation":74.0,
				"feature_code":"PPLC","country_code":"DE","admin1_id":2950157,"timezone":"Europe/Berlin","population":3426354,
				"country_id":2921044,"country":"Germany","admin1":"State of Berlin"}],"generationtime_ms":0.71}`)
		case "paris":
			fmt.Fprint(w, `{"results":[
				{"id":2988507,"name":"Paris","latitude":48.85341,"longitude":2.3488,"country_code":"FR","country":"France","admin1":"Île-de-France"},
				{"id":4717560,"name":"Paris","latitude":33.66094,"longitude":-95.55551,"country_code":"US","country":"United States","admin1":"Texas"}],
				"generationtime_ms":1.2}`)
		case "pole": // a place the forecast service refuses
			fmt.Fprint(w, `{"results":[{"name":"Pole","latitude":91,"longitude":0,"country":"Nowhere"}]}`)
		case "broken":
			http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
		case "slow":
			select {
			case <-r.Context().Done(): // the plugin gave up: good
			case <-time.After(10 * time.Second):
				t.Error("the request was not cancelled")
			}
		default:
			fmt.Fprint(w, `{"generationtime_ms":0.4}`) // no "results" at all
		}
	})
	mux.HandleFunc("GET /v1/forecast", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("latitude") == "91" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"reason":"Latitude must be in range of -90 to 90°. Given: 91.0.","error":true}`)
			return
		}
		if q.Get("timezone") != "auto" || q.Get("longitude") == "" {
			t.Errorf("forecast query: %s", r.URL.RawQuery)
		}
		temp, wind, rain := "°C", "km/h", "mm"
		if q.Get("temperature_unit") == "fahrenheit" {
			temp, wind, rain = "°F", "mph", "inch"
		}
		switch {
		case q.Get("current") == "temperature_2m,wind_speed_10m,weather_code":
			fmt.Fprintf(w, `{"latitude":52.52,"longitude":13.419998,"generationtime_ms":0.05,"utc_offset_seconds":7200,
				"timezone":"Europe/Berlin","timezone_abbreviation":"CEST","elevation":38.0,
				"current_units":{"time":"iso8601","interval":"seconds","temperature_2m":%q,"wind_speed_10m":%q,"weather_code":"wmo code"},
				"current":{"time":"2026-06-01T14:15","interval":900,"temperature_2m":21.5,"wind_speed_10m":11.2,"weather_code":2}}`, temp, wind)
		case q.Get("daily") == "weather_code,temperature_2m_min,temperature_2m_max,precipitation_sum" && q.Get("forecast_days") == "3":
			fmt.Fprintf(w, `{"latitude":52.52,"longitude":13.419998,"timezone":"Europe/Berlin",
				"daily_units":{"time":"iso8601","weather_code":"wmo code","temperature_2m_min":%[1]q,"temperature_2m_max":%[1]q,"precipitation_sum":%[2]q},
				"daily":{"time":["2026-06-01","2026-06-02","2026-06-03"],"weather_code":[61,3,100],
				"temperature_2m_min":[12.1,11.0,null],"temperature_2m_max":[19.4,22.8,null],"precipitation_sum":[3.2,0.0]}}`, temp, rain)
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"reason":"unexpected request in the test","error":true}`)
			t.Errorf("unexpected forecast query: %s", r.URL.RawQuery)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func ptr(f float64) *float64 { return &f }

// TestTools tests the provider in process. sdktest.Serve puts it behind the
// real gRPC adapter, and sdktest.Call checks arguments against the schema
// as the host does, so the results are what a model would see.
func TestTools(t *testing.T) {
	srv := fakeOpenMeteo(t)
	p := sdktest.Serve(t, newProvider(newOpenMeteo(srv.URL, srv.URL)))

	t.Run("current_weather", func(t *testing.T) {
		got := sdktest.Decode[Current](t, sdktest.Call(t, p, "current_weather", currentArgs{City: "Berlin"}))
		want := Current{
			Location: "Berlin, State of Berlin, Germany", Time: "2026-06-01T14:15", Conditions: "partly cloudy",
			Temperature: ptr(21.5), TemperatureUnit: "°C", WindSpeed: ptr(11.2), WindSpeedUnit: "km/h",
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got  %+v\nwant %+v", got, want)
		}
	})

	t.Run("current_weather imperial, qualified city", func(t *testing.T) {
		got := sdktest.Decode[Current](t, sdktest.Call(t, p, "current_weather", map[string]any{"city": "paris, texas", "units": "imperial"}))
		if got.Location != "Paris, Texas, United States" || got.TemperatureUnit != "°F" || got.WindSpeedUnit != "mph" {
			t.Errorf("got %+v", got)
		}
	})

	t.Run("forecast", func(t *testing.T) {
		got := sdktest.Decode[Forecast](t, sdktest.Call(t, p, "forecast", forecastArgs{City: "Berlin", Days: 3}))
		if got.Location != "Berlin, State of Berlin, Germany" || got.TemperatureUnit != "°C" || got.PrecipitationUnit != "mm" || len(got.Days) != 3 {
			t.Fatalf("got %+v", got)
		}
		d0, d2 := got.Days[0], got.Days[2]
		if d0.Date != "2026-06-01" || d0.Conditions != "slight rain" || *d0.TemperatureMin != 12.1 || *d0.TemperatureMax != 19.4 || *d0.Precipitation != 3.2 {
			t.Errorf("day 0: %+v", d0)
		}
		// Nulls and short lists leave values out instead of failing.
		if d2.Conditions != "unknown (WMO code 100)" || d2.TemperatureMin != nil || d2.TemperatureMax != nil || d2.Precipitation != nil {
			t.Errorf("day 2: %+v", d2)
		}
	})

	// Every failure is an error result the model can read and act on.
	errorCases := []struct {
		name, tool string
		args       any
		want       string
	}{
		// Refused by the schema, before the plugin is called.
		{"too many days", "forecast", map[string]any{"city": "Berlin", "days": 8}, "must be <= 7"},
		{"unknown units", "current_weather", map[string]any{"city": "Berlin", "units": "kelvin"}, `value must be one of "metric", "imperial"`},
		{"no city", "current_weather", map[string]any{}, "missing properties: 'city'"},
		{"unknown argument", "current_weather", map[string]any{"city": "Berlin", "country": "DE"}, "additionalProperties 'country' not allowed"},
		// Refused by the plugin.
		{"empty city", "current_weather", currentArgs{City: " , France"}, "city is empty"},
		{"unknown city", "current_weather", currentArgs{City: "Atlantis"}, `no place called "Atlantis" was found`},
		{"city not in region", "forecast", forecastArgs{City: "Paris, Narnia", Days: 1},
			`no place called "Paris" in "Narnia" was found; places with that name: Paris, Île-de-France, France; Paris, Texas, United States`},
		{"service refuses", "current_weather", currentArgs{City: "Pole"}, "the weather service refused the request: Latitude must be in range"},
		{"service fails", "current_weather", currentArgs{City: "Broken"}, "the weather service failed (HTTP 502); try again later"},
	}
	for _, c := range errorCases {
		t.Run(c.name, func(t *testing.T) {
			if got := sdktest.ErrorText(t, sdktest.Call(t, p, c.tool, c.args)); !strings.Contains(got, c.want) {
				t.Errorf("got  %q\nwant it to contain %q", got, c.want)
			}
		})
	}

	t.Run("honours the call's deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		resp, err := p.CallTool(ctx, sdk.CallToolRequest{Name: "current_weather", Arguments: []byte(`{"city": "Slow"}`)})
		if err == nil && !resp.IsError {
			t.Errorf("got %s", resp.Content)
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the call took %v", d)
		}
	})
}

// TestPlugin builds the plugin and runs it as the host does: a subprocess,
// handshake, gRPC. The plugin inherits the test's environment, which is how
// it finds the fake service.
func TestPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the plugin")
	}
	srv := fakeOpenMeteo(t)
	t.Setenv("WEATHER_API_URL", srv.URL)
	p := sdktest.Start(t, sdktest.Build(t, "."))

	md, err := p.Metadata(context.Background(), sdk.MetadataRequest{})
	if err != nil || md.Version != version || len(md.Tools) != 2 {
		t.Fatalf("metadata: %+v, %v", md, err)
	}
	cur := sdktest.Decode[Current](t, sdktest.Call(t, p, "current_weather", currentArgs{City: "Berlin", Units: "imperial"}))
	if cur.Location != "Berlin, State of Berlin, Germany" || cur.TemperatureUnit != "°F" {
		t.Errorf("current_weather: %+v", cur)
	}
	fc := sdktest.Decode[Forecast](t, sdktest.Call(t, p, "forecast", forecastArgs{City: "Berlin", Days: 3}))
	if len(fc.Days) != 3 {
		t.Errorf("forecast: %+v", fc)
	}
	if got := sdktest.ErrorText(t, sdktest.Call(t, p, "forecast", forecastArgs{City: "Atlantis", Days: 1})); !strings.Contains(got, "Atlantis") {
		t.Errorf("unknown city: %q", got)
	}
}

func TestEnvironment(t *testing.T) {
	for _, c := range []struct {
		api, geo         string
		wantAPI, wantGeo string
	}{
		{"", "", "https://api.open-meteo.com", "https://geocoding-api.open-meteo.com"},
		{"http://mirror:8080/", "", "http://mirror:8080", "http://mirror:8080"},
		{"http://mirror:8080", "http://geo", "http://mirror:8080", "http://geo"},
		{"", "http://geo/", "https://api.open-meteo.com", "http://geo"},
	} {
		t.Setenv("WEATHER_API_URL", c.api)
		t.Setenv("WEATHER_GEOCODING_URL", c.geo)
		om := openMeteoFromEnv()
		if om.forecastURL != c.wantAPI || om.geocodingURL != c.wantGeo {
			t.Errorf("WEATHER_API_URL=%q WEATHER_GEOCODING_URL=%q: forecast %q, geocoding %q", c.api, c.geo, om.forecastURL, om.geocodingURL)
		}
	}
}

// The plugin's options reach it: units set there are a call's units when
// the call names none.
func TestPluginOptions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the plugin")
	}
	srv := fakeOpenMeteo(t)
	t.Setenv("WEATHER_API_URL", srv.URL)
	p := sdktest.StartConfigured(t, map[string]string{"units": "imperial"}, sdktest.Build(t, "."))
	if cur := sdktest.Decode[Current](t, sdktest.Call(t, p, "current_weather", currentArgs{City: "Berlin"})); cur.TemperatureUnit != "°F" {
		t.Errorf("current_weather without units, the option imperial: %+v", cur)
	}
	if cur := sdktest.Decode[Current](t, sdktest.Call(t, p, "current_weather", currentArgs{City: "Berlin", Units: "metric"})); cur.TemperatureUnit != "°C" {
		t.Errorf("current_weather with units metric: %+v", cur)
	}
}

// `tenxgraph validate` checks the plugin's options against the schema the
// plugin declares, and reports each mistake with its path in the config,
// beside the file's other mistakes; good options pass.
func TestValidateChecksTheOptions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the plugin and tenxgraph")
	}
	plugin := sdktest.Build(t, ".")
	host := sdktest.Build(t, "github.com/tenxgraph/tenxgraph/cmd/tenxgraph")
	dir := t.TempDir()
	var validateAs func(options any, script bool) (string, error)
	validate := func(options any) (string, error) { return validateAs(options, true) }
	validateAs = func(options any, script bool) (string, error) {
		entry := map[string]any{"name": "weather", "command": []string{plugin}}
		if options != nil {
			entry["options"] = options
		}
		cfg, err := json.Marshal(map[string]any{
			"agent":        "tenxgraph:react",
			"model":        map[string]any{"provider": "scripted", "script": "script.json"},
			"checkpointer": map[string]any{"type": "memory"},
			"plugins":      []any{entry},
		})
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{"10xgraph.json": string(cfg)}
		if script {
			files["script.json"] = `{"rules": [{"match": "(?s).*", "text": "hi"}]}`
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		out, err := exec.Command(host, "validate", "--config", filepath.Join(dir, "10xgraph.json")).CombinedOutput()
		return string(out), err
	}
	out, err := validate(map[string]any{"units": "kelvin", "unit": "metric"})
	if err == nil {
		t.Fatalf("validate passed bad options:\n%s", out)
	}
	for _, want := range []string{
		`plugins[0].options.units: value must be one of "metric", "imperial"`,
		`plugins[0].options.unit: unknown key: did you mean "units"? (allowed: units)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate's output lacks %q:\n%s", want, out)
		}
	}
	// Beside the file's other mistakes, which keep the plugins from
	// starting for real: the plugin is started only to be asked.
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"rules": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = validateAs(map[string]any{"units": "kelvin"}, false)
	if err == nil || !strings.Contains(out, `plugins[0].options.units: value must be one of`) || !strings.Contains(out, "model: scripted model") {
		t.Errorf("validate with a bad script and a bad option: %v\n%s", err, out)
	}
	if out, err := validate(map[string]any{"units": "imperial"}); err != nil {
		t.Errorf("validate refused good options: %v\n%s", err, out)
	}
	if out, err := validate(nil); err != nil {
		t.Errorf("validate refused a config without options: %v\n%s", err, out)
	}
}
