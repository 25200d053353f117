package config

import (
	"slices"
	"strings"
	"testing"
)

// TestAllowedHosts checks server.allowed_hosts: names and IP addresses are
// kept (names in lower case, IPs in their canonical form), and a URL, a
// port or a path is refused with its path, all in one pass.
func TestAllowedHosts(t *testing.T) {
	c := mustParse(t, `{"agent": "a", "server": {"allowed_hosts": ["MyHost.Local", "192.168.1.5", "[::1]", "box."]}}`, "/p")
	if want := []string{"myhost.local", "192.168.1.5", "::1", "box"}; !slices.Equal(c.Server.AllowedHosts, want) {
		t.Fatalf("allowed_hosts: got %q, want %q", c.Server.AllowedHosts, want)
	}
	if c := mustParse(t, `{"agent": "a"}`, "/p"); c.Server.AllowedHosts != nil {
		t.Fatalf("default allowed_hosts: got %q, want none", c.Server.AllowedHosts)
	}

	_, err := Parse([]byte(`{"agent": "a", "server": {"allowed_hosts": ["http://x.example", "x.example:8123", "x.example/a", "", 3]}}`), "/p")
	ps := problems(t, err)
	want := []string{"server.allowed_hosts[0]", "server.allowed_hosts[1]", "server.allowed_hosts[2]", "server.allowed_hosts[3]", "server.allowed_hosts[4]"}
	if got := paths(ps); !slices.Equal(got, want) {
		t.Fatalf("paths: got %q, want %q\n%v", got, want, err)
	}
	for _, msg := range []string{"without a scheme or path", "has a port", "must not be empty", "must be a string"} {
		if !strings.Contains(err.Error(), msg) {
			t.Errorf("message should contain %q:\n%v", msg, err)
		}
	}
	_, err = Parse([]byte(`{"agent": "a", "server": {"allowed_hosts": "x.example"}}`), "/p")
	if got := paths(problems(t, err)); !slices.Equal(got, []string{"server.allowed_hosts"}) {
		t.Fatalf("a string for the list: paths %q\n%v", got, err)
	}
}
