package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// maxName is the longest tool name every model API accepts.
const maxName = 64

// sanitize maps an MCP tool name (the spec allows '.', '/' and up to 128
// characters) onto what model APIs accept: characters outside
// [A-Za-z0-9_-] become '_'.
func sanitize(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c != '_' && c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "tool"
	}
	return string(b)
}

// shortHash is 8 hex digits of the sha256 of the names: stable across runs,
// so a long name shortened today is shortened the same way tomorrow.
func shortHash(names ...string) string {
	h := sha256.Sum256([]byte(strings.Join(names, "\x00")))
	return hex.EncodeToString(h[:4])
}

// fit keeps name within maxName: a longer one is cut and ends in a short
// hash of the server and tool it names, so two long names sharing their
// first 55 characters stay apart.
func fit(name, server, tool string) string {
	if len(name) <= maxName {
		return name
	}
	return name[:maxName-9] + "_" + shortHash(server, tool)
}

// toolRef is one server tool to be named.
type toolRef struct {
	server string // the server's config key
	tool   string // the tool's name on the server
}

// collision is a name that two servers' tools, or a server tool and
// another provider's tool, share; the report lists every claimant with the
// name it got.
type collision struct {
	name  string    // the name as sanitized
	taken bool      // another provider's tool on the node has it
	refs  []toolRef // the server tools claiming it
	given []string  // the names they were offered under, in refs' order
}

func (c collision) String() string {
	offers := make([]string, len(c.refs))
	for i, r := range c.refs {
		offers[i] = fmt.Sprintf("%s's %q as %s", r.server, r.tool, c.given[i])
	}
	who := "servers"
	if len(c.refs) == 1 {
		who = "server"
	}
	if c.taken {
		return fmt.Sprintf("tool name %q is already taken on the node by another provider's tool; offering %s %s", c.name, who, strings.Join(offers, ", "))
	}
	return fmt.Sprintf("tool name %q is claimed by several MCP server tools; offering %s", c.name, strings.Join(offers, ", "))
}

// assignNames names every server tool for the model. A tool keeps its own
// (sanitized) name when no other tool on the node has it; otherwise every
// claimant is prefixed with its server's key ("files__read_file"), so no
// tool hides another and the names do not depend on which server answered
// first. Names stay within ^[a-zA-Z0-9_-]{1,64}$ and are unique; the result
// is in refs' order. The same input always gives the same names.
func assignNames(refs []toolRef, taken map[string]bool) ([]string, []collision) {
	base := make([]string, len(refs))
	claims := map[string][]int{}
	for i, r := range refs {
		base[i] = sanitize(r.tool)
		claims[base[i]] = append(claims[base[i]], i)
	}
	names := make([]string, len(refs))
	for i, r := range refs {
		if len(claims[base[i]]) == 1 && !taken[base[i]] {
			names[i] = fit(base[i], r.server, r.tool)
		} else {
			names[i] = fit(r.server+"__"+base[i], r.server, r.tool)
		}
	}
	// A prefixed name can still meet another tool's own name
	// ("a__b" of server "a" and tool "a__b" of server "c"), or two tools of
	// one server can sanitize alike ("a.b", "a_b"): the later one gets a
	// hash of what it names.
	used := make(map[string]bool, len(taken)+len(refs))
	for n := range taken {
		used[n] = true
	}
	for i, r := range refs {
		n := names[i]
		for k := 0; used[n]; k++ {
			n = names[i]
			if len(n) > maxName-9 {
				n = n[:maxName-9]
			}
			n += "_" + shortHash(r.server, r.tool, fmt.Sprint(k))
		}
		used[n] = true
		names[i] = n
	}
	var cs []collision
	for name, idx := range claims {
		if len(idx) < 2 && !taken[name] {
			continue
		}
		c := collision{name: name, taken: taken[name]}
		for _, i := range idx {
			c.refs = append(c.refs, refs[i])
			c.given = append(c.given, names[i])
		}
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	return names, cs
}
