package config

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/decl"
	"github.com/tenxgraph/tenxgraph/host/media"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/remotetool/declared"
	"github.com/tenxgraph/tenxgraph/internal/hostallow"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// The sections' readers: each decodes its value (already judged by the
// schema) into its part of Config, fills in defaults and checks what the
// schema cannot say. v is nil when the file leaves the section out.

func (c *checker) remoteTools(path string, v *value) []decl.RemoteTool {
	if v == nil || v.kind != kindArray || len(v.items) == 0 {
		return nil
	}
	tools := make([]decl.RemoteTool, len(v.items))
	for i, it := range v.items {
		p := toolspec.Join(path, toolspec.Index(i))
		t := &tools[i]
		t.Node = DefaultNode
		c.decode(p, it, t)
		// The shared rules judge the name and the schema as written,
		// in their own words.
		if name := it.field("name"); name != nil && name.kind == kindString {
			t.Name = name.text
		}
		if params := it.field("parameters"); params != nil {
			var buf bytes.Buffer
			params.encode(&buf)
			t.Parameters = buf.Bytes()
		}
		if alias := it.field("node_name"); alias != nil {
			switch {
			case it.field("node") != nil:
				c.add(toolspec.Join(p, "node_name"), "use one of node or node_name (node_name is an alias of node)")
			case !c.refused(toolspec.Join(p, "node_name")) && alias.kind == kindString:
				t.Node = alias.text
			}
		}
	}
	// Names, schemas and duplicates are judged by the rules shared with
	// code-first AttachRemoteTools. Where the file already said what is
	// wrong (a name that is not a string), its "missing" would only
	// repeat it.
	for _, p := range declared.Check(tools) {
		if at := toolspec.Join(path, p.Path); !strings.HasPrefix(p.Message, "missing") || !c.covered(at) {
			c.add(at, "%s", p.Message)
		}
	}
	return tools
}

func (c *checker) model(path string, v *value) *Model {
	if v == nil || c.refused(path) {
		return nil
	}
	var p model.ProviderInfo
	known := false
	if pv := v.field("provider"); pv != nil && pv.kind == kindString && !c.refused(toolspec.Join(path, "provider")) {
		p, known = model.Lookup(pv.text)
	}
	// Another provider's own keys are refused, and read as left out.
	var others []string
	for _, o := range model.Providers() {
		for _, k := range o.Own {
			if known && o.Name != p.Name && v.field(k) != nil {
				c.add(toolspec.Join(path, k), "%s", o.Refusal(k, p.Name))
				others = append(others, k)
			}
		}
	}
	m := &Model{MaxSteps: DefaultMaxSteps, MaxRetries: DefaultMaxRetries}
	c.decode(path, v.without(others...), m)
	c.checkURL(path, m.BaseURL)
	if !known {
		return m // the schema said the provider is missing or unknown
	}
	if v.field("api_key_env") == nil {
		m.APIKeyEnv = p.KeyEnv
	}
	if p.Settle != nil {
		p.Settle(m, block{c: c, path: path, v: v})
	}
	return m
}

// checkURL checks the model block's base_url, which every provider takes.
func (c *checker) checkURL(path, u string) {
	if u == "" {
		return
	}
	if err := CheckURL(u); err != nil {
		c.add(toolspec.Join(path, "base_url"), "%v", err)
	}
}

// block is the model block as its provider's Settle reads it.
type block struct {
	c    *checker
	path string
	v    *value
}

func (b block) Has(key string) bool { return b.v.field(key) != nil }

func (b block) Checked(key string) bool {
	at := toolspec.Join(b.path, key)
	return b.Has(key) && !b.c.refused(at) &&
		!slices.ContainsFunc(b.c.ps, func(p toolspec.Problem) bool { return p.Path == at })
}

func (b block) Problem(key, format string, args ...any) {
	b.c.add(toolspec.Join(b.path, key), format, args...)
}

func (b block) Resolve(p string) string { return b.c.resolve(p) }

// settings puts provider_defaults under an entry's decoded shared keys and
// reads its require_approval.
func (c *checker) settings(path string, v *value, s *ProviderSettings) {
	s.Timeout = cmp.Or(s.Timeout, c.defaults.Timeout)
	s.MaxArgumentBytes = cmp.Or(s.MaxArgumentBytes, c.defaults.MaxArgumentBytes)
	s.MaxResultBytes = cmp.Or(s.MaxResultBytes, c.defaults.MaxResultBytes)
	ra := v.field("require_approval")
	if ra == nil {
		return
	}
	at := toolspec.Join(path, "require_approval")
	switch ra.kind {
	case kindBool:
		s.RequireApproval.All = ra.b
	case kindArray:
		if len(ra.items) == 0 {
			c.add(at, "an empty list asks nothing: use false, or name the tools")
		}
		seen := map[string]bool{}
		for i, it := range ra.items {
			ip := toolspec.Join(at, toolspec.Index(i))
			switch {
			case it.kind != kindString:
				c.add(ip, "must be a string, got %s", it.kind)
			case it.text == "":
				c.add(ip, "must not be empty: a tool name")
			case seen[it.text]:
				c.add(ip, "%q is listed twice", it.text)
			default:
				seen[it.text] = true
				s.RequireApproval.Tools = append(s.RequireApproval.Tools, it.text)
			}
		}
	default:
		c.add(at, "want true, false or a list of the provider's tool names")
	}
}

// hosts keeps the allow_hosts entries at path that follow the builtin
// provider's rules (internal/hostallow) and reports the others; a list
// the file has stays non-nil.
func (c *checker) hosts(path string, list []string) []string {
	if list == nil {
		return nil
	}
	out := []string{}
	for i, h := range list {
		if err := hostallow.Check(h); err != nil {
			c.add(toolspec.Join(path, toolspec.Index(i)), "%v", err)
			continue
		}
		out = append(out, h)
	}
	return out
}

// providerDefaults reads provider_defaults: the call limits and the
// sandbox profile every provider entry starts from.
func (c *checker) providerDefaults(path string, v *value) sandbox.Profile {
	if v == nil || c.refused(path) {
		return sandbox.Profile{}
	}
	var d struct {
		ProviderSettings
		Sandbox sandbox.Profile `json:",embed"`
	}
	c.decode(path, v, &d)
	c.defaults.Settings = d.Settings
	d.Sandbox.Env = c.envKeys(toolspec.Join(path, "env"), d.Sandbox.Env)
	c.sandboxDefaults = c.profile(path, v, d.Sandbox)
	return c.sandboxDefaults
}

// checkpointer reads the "checkpointer" block by its kind (package
// checkpoint's registry): another kind's own keys are refused and read as
// left out, and the kind settles the rest.
func (c *checker) checkpointer(path string, v *value) Checkpointer {
	k, _ := checkpoint.LookupKind("")
	typePath := toolspec.Join(path, "type")
	if t := v.field("type"); t != nil && t.kind == kindString && !c.refused(typePath) {
		if named, ok := checkpoint.LookupKind(t.text); ok {
			k = named
		}
	}
	report := v != nil && !c.refused(path) && !c.refused(typePath)
	var others []string
	for _, o := range checkpoint.Kinds() {
		for _, key := range o.Own {
			if o.Name != k.Name && v.field(key) != nil {
				if report {
					c.add(toolspec.Join(path, key), "%s", o.Refusal(key, k.Name))
				}
				others = append(others, key)
			}
		}
	}
	cp := Checkpointer{Type: k.Name}
	c.decode(path, v.without(others...), &cp)
	if k.Settle != nil {
		k.Settle(&cp, c.resolve)
	}
	return cp
}

func (c *checker) server(path string, v *value) Server {
	s := Server{Addr: DefaultAddr, MaxBodyBytes: DefaultMaxBodyBytes, MaxRequestMessages: DefaultMaxRequestMessages}
	c.decode(path, v, &s)
	if err := checkAddr(s.Addr); err != nil {
		c.add(toolspec.Join(path, "addr"), "%v", err)
		s.Addr = DefaultAddr
	}
	if s.Auth != nil {
		at := toolspec.Join(path, "auth.tokens_env")
		if tokens := v.field("auth").field("tokens_env"); tokens != nil && tokens.kind == kindArray && len(tokens.items) == 0 {
			c.add(at, "must name at least one environment variable; leave out auth for an open API")
		}
	}
	s.CORS.AllowOrigins = c.each(toolspec.Join(path, "cors.allow_origins"), s.CORS.AllowOrigins, checkOrigin)
	s.AllowedHosts = c.each(toolspec.Join(path, "allowed_hosts"), s.AllowedHosts, checkServedHost)
	return s
}

// each reads every entry of the list at path with read, keeping what it
// returns and reporting its errors.
func (c *checker) each(path string, list []string, read func(string) (string, error)) []string {
	if list == nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for i, s := range list {
		v, err := read(s)
		if err != nil {
			c.add(toolspec.Join(path, toolspec.Index(i)), "%v", err)
			continue
		}
		out = append(out, v)
	}
	return out
}

// checkServedHost reads a server.allowed_hosts entry: a host name or IP
// address as a Host header carries it, without a scheme, port or path,
// which is compared with the Host of each request. It is returned in
// lower case.
func checkServedHost(h string) (string, error) {
	name := strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	switch {
	case strings.Contains(h, "://") || strings.ContainsAny(h, "/?#@ "):
		return "", fmt.Errorf("%q is not a host name: list only the name, such as \"myhost.local\", without a scheme or path", h)
	case net.ParseIP(name) == nil && strings.Contains(h, ":"):
		return "", fmt.Errorf("%q has a port: list only the name (any port of the server is accepted)", h)
	case net.ParseIP(name) == nil && strings.ContainsAny(h, "[]"):
		return "", fmt.Errorf("%q is not a host name or IP address", h)
	}
	if ip := net.ParseIP(name); ip != nil {
		return ip.String(), nil
	}
	return strings.ToLower(strings.TrimSuffix(h, ".")), nil
}

// checkOrigin reads a CORS origin. Browsers send Origin without a path or
// a trailing slash, so an entry with one would never match.
func checkOrigin(o string) (string, error) {
	if o == "*" {
		return o, nil
	}
	u, err := url.Parse(o)
	switch {
	case err != nil || u.Scheme == "" || u.Host == "":
		return "", fmt.Errorf("%q is not an origin: use scheme://host[:port], such as \"http://localhost:5173\", or \"*\"", o)
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
		return "", fmt.Errorf("%q is not an origin: browsers send only scheme://host[:port], with no path or trailing slash, such as %q", o, u.Scheme+"://"+u.Host)
	}
	return o, nil
}

// media reads the "media" block.
func (c *checker) media(path string, v *value) Media {
	var m Media
	c.decode(path, v, &m)
	var fetch struct {
		AllowHosts []string      `json:"allow_hosts"`
		Timeout    time.Duration `json:"timeout"`
	}
	c.decode(toolspec.Join(path, "fetch"), v.field("fetch"), &fetch)
	m.FetchAllowHosts, m.FetchTimeout = fetch.AllowHosts, fetch.Timeout
	if m.AllowedTypes != nil && v != nil {
		types, at := v.field("allowed_types"), toolspec.Join(path, "allowed_types")
		m.AllowedTypes = []string{}
		seen := map[string]bool{}
		for i, it := range types.items {
			ip := toolspec.Join(at, toolspec.Index(i))
			if it.kind != kindString || it.text == "" {
				continue
			}
			switch err := media.CheckType(it.text); {
			case err != nil:
				c.add(ip, "%v", err)
			case seen[it.text]:
				c.add(ip, "%q is listed twice", it.text)
			default:
				seen[it.text] = true
				m.AllowedTypes = append(m.AllowedTypes, it.text)
			}
		}
	}
	m.FetchAllowHosts = c.hosts(toolspec.Join(path, "fetch.allow_hosts"), m.FetchAllowHosts)
	return m
}

// envKeys drops the variables of an env whose names no environment can
// hold, reporting each.
func (c *checker) envKeys(path string, env map[string]string) map[string]string {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if err := checkEnvKey(k); err != nil {
			c.add(toolspec.Join(path, pathKey(k)), "%v", err)
			delete(env, k)
		}
	}
	return env
}

// CheckURL says why s is not an http or https URL with a host, the
// endpoints the host reaches (a model's base_url, an MCP server's url).
func CheckURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http or https URL", s)
	}
	return nil
}

func checkAddr(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q must be host:port, such as %q", s, DefaultAddr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: the port must be a number from 0 to 65535", s)
	}
	return nil
}

func checkEnvKey(k string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Errorf("%q is not an environment variable name", k)
	}
	return nil
}
