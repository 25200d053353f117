package builtin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/plugins/builtin"
	"github.com/tenxgraph/tenxgraph/sdk/sdktest"
)

// TestPluginProcessConfinement runs the builtin provider as the host does,
// a `tenxgraph plugin builtin` subprocess configured over the plugin
// protocol (Configure), against real listeners and a real workspace: an allowed
// loopback server given as a CIDR is reached, redirects from it to the
// metadata address and to another loopback listener are refused, and a
// hard link planted in the workspace is written through by no mode.
func TestPluginProcessConfinement(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tenxgraph binary")
	}
	var targetHits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targetHits.Add(1)
		fmt.Fprint(w, "internal")
	}))
	defer target.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/meta":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, target.URL+"/", http.StatusFound)
		default:
			fmt.Fprint(w, "front")
		}
	}))
	defer front.Close()
	fu, err := url.Parse(front.URL)
	if err != nil {
		t.Fatal(err)
	}

	ws, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(ws, "planted.txt")); err != nil {
		t.Skipf("hard links unavailable: %v", err)
	}

	opts := builtin.Options{
		Enable:        []string{"http_fetch", "write_file"},
		HTTPFetch:     builtin.HTTPFetchOptions{AllowedHosts: []string{"127.0.0.1/32:" + fu.Port(), "169.254.0.0/16"}},
		WorkspaceRoot: ws,
	}
	p := sdktest.StartConfigured(t, opts, sdktest.Build(t, "github.com/tenxgraph/tenxgraph/cmd/tenxgraph"), "plugin", "builtin")

	type result struct {
		Body string `json:"body"`
	}
	if r := sdktest.Decode[result](t, sdktest.Call(t, p, "http_fetch", map[string]any{"url": front.URL + "/"})); r.Body != "front" {
		t.Errorf("the allowed server: %+v", r)
	}
	for path, want := range map[string]string{
		"/meta": "address 169.254.169.254:80 is a cloud metadata service address",
		"/loop": "port " + strings.TrimPrefix(target.URL, "http://127.0.0.1:") + ` of host "127.0.0.1" is not allowed`,
	} {
		msg := sdktest.ErrorText(t, sdktest.Call(t, p, "http_fetch", map[string]any{"url": front.URL + path}))
		if !strings.Contains(msg, "redirect to") || !strings.Contains(msg, want) {
			t.Errorf("%s: %q, want a refused redirect saying %q", path, msg, want)
		}
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("the loopback target was reached %d times", n)
	}

	for _, args := range []map[string]any{
		{"path": "planted.txt", "content": "pwned"},
		{"path": "planted.txt", "content": "pwned", "append": true},
	} {
		raw, _ := json.Marshal(args)
		msg := sdktest.ErrorText(t, sdktest.Call(t, p, "write_file", json.RawMessage(raw)))
		if !strings.Contains(msg, `path "planted.txt" has 2 hard links`) {
			t.Errorf("write_file %s: %q", raw, msg)
		}
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret" {
		t.Errorf("the file outside the workspace now holds %q (%v)", b, err)
	}
}
