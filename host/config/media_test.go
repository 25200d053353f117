package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedia(t *testing.T) {
	for src, want := range map[string]Media{
		`{"agent": "a"}`:              {},
		`{"agent": "a", "media": {}}`: {},
		`{"agent": "a", "media": {"allowed_types": ["image/png", "text/markdown"], "max_blob_bytes": 1048576, "max_request_bytes": 2097152,
			"max_image_pixels": 1000000, "fetch": {"allow_hosts": ["images.example.com", "10.0.0.0/8:8443"], "timeout": "3s"}}}`: {
			AllowedTypes: []string{"image/png", "text/markdown"}, MaxBlobBytes: 1 << 20, MaxRequestBytes: 2 << 20, MaxImagePixels: 1000000,
			FetchAllowHosts: []string{"images.example.com", "10.0.0.0/8:8443"}, FetchTimeout: 3 * time.Second},
		// Empty lists: no media at all, no url fetched.
		`{"agent": "a", "media": {"allowed_types": [], "fetch": {"allow_hosts": []}}}`: {AllowedTypes: []string{}, FetchAllowHosts: []string{}},
	} {
		cfg, err := Parse([]byte(src), "/p")
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if !reflect.DeepEqual(cfg.Media, want) {
			t.Errorf("%s: %+v, want %+v", src, cfg.Media, want)
		}
	}
	// Every problem at once, each with its path.
	_, err := Parse([]byte(`{"agent": "a", "media": {"allowed_types": ["image/png", "image/svg+xml", "video/mp4", "image/png", 3],
		"max_blob_bytes": 0, "max_request_bytes": "1MB", "max_image_pixels": -5,
		"fetch": {"allow_hosts": ["https://x.example/", "*"], "timeout": 10, "proxy": "p"}, "max_bytes": 1}}`), "/p")
	ps := problems(t, err)
	want := []string{"media.allowed_types[1]", "media.allowed_types[2]", "media.allowed_types[3]", "media.allowed_types[4]",
		"media.fetch.allow_hosts[0]", "media.fetch.allow_hosts[1]", "media.fetch.proxy", "media.fetch.timeout",
		"media.max_blob_bytes", "media.max_bytes", "media.max_image_pixels", "media.max_request_bytes"}
	if got := paths(ps); !slices.Equal(got, want) {
		t.Fatalf("paths %q\nwant  %q\n%v", got, want, err)
	}
	for _, says := range []string{"an SVG is a document", `"video/mp4" is not a type the host can check`, `"image/png" is listed twice`, "not a host"} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("%v\nwant it to say %q", err, says)
		}
	}
}
