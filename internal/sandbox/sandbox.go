// Package sandbox starts every process tenxgraph runs: provider plugins
// started by the host, MCP servers started by the bridge. It is the one
// place where a child gets its environment, its limits, its network and its
// user, and the one place that makes sure nothing a child started outlives
// it.
//
// Every process starts through a trampoline (the host's own executable,
// run as `EXE ExecArg init`), which stays as the process's init. By
// default, where the kernel allows it:
//
//   - A PID namespace of its own with a fresh /proc (a host running as
//     root): the process sees no other process, and when its init ends,
//     however it ends, the kernel ends everything in the namespace.
//   - A Landlock domain of its own: it can neither trace nor read through
//     /proc any process outside (the host, its init, other providers),
//     and from Landlock ABI 6 neither signal them nor reach their abstract
//     unix sockets.
//   - Cgroups of its own wherever a hierarchy is writable, which hold its
//     whole tree: Kill ends everything in them, and a later host removes
//     those a host killed with SIGKILL left.
//   - A host that is not dumpable (ProtectHost): a process of its account
//     without CAP_SYS_PTRACE cannot read its memory or environment.
//
// What the kernel lacks of these is a warning in Process.Isolation, not a
// failure. On top, a child gets only what its Profile gives it:
//
//   - Environment, default deny: PATH, LANG, LC_ALL and TZ from the host,
//     HOME and TMPDIR pointing at a private folder removed when the process
//     is released, then the profile's literal Env and the host variables
//     its PassEnv names. Nothing else of the host's environment is passed.
//   - Limits: memory through a memory cgroup (every kind of memory, swap
//     excluded; RLIMIT_DATA where no memory cgroup is writable), a process
//     count through pids.max, and rlimits for CPU seconds and open files.
//   - Network "none": a new network namespace (inside a new user namespace
//     when the host is not root), which has only a loopback interface that
//     is down.
//   - User and group, when the host runs as root.
//   - Filesystem: a Landlock domain that allows only the paths listed.
//
// A protection the profile asks for and the kernel refuses is an error
// naming the profile key; it is never dropped silently.
package sandbox

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Network modes of a Profile.
const (
	// NetworkHost shares the host's network: the default, what a provider
	// that calls web APIs needs.
	NetworkHost = "host"
	// NetworkNone gives the process a network namespace of its own with no
	// interface up: it cannot reach the host's loopback or anything else.
	NetworkNone = "none"
)

// Profile is what one process may have. The zero Profile is the default:
// the minimal environment, the host's network, no limits.
type Profile struct {
	// Env are literal variables set in the process's environment.
	Env map[string]string `json:"env,omitempty"`
	// PassEnv names host variables passed through when they are set.
	// Naming PATH, HOME, TMPDIR, LANG, LC_ALL or TZ replaces the base
	// value with the host's.
	PassEnv []string `json:"pass_env,omitempty"`
	// Limits bound the process's resources; zero fields are unlimited.
	Limits Limits `json:"limits,omitzero"`
	// Network is NetworkHost ("" means the same) or NetworkNone.
	Network string `json:"network,omitempty"`
	// User and Group run the process as another account; only a host
	// running as root can. Group defaults to the user's primary group.
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
	// Filesystem, when set, confines the process and what it starts to
	// the paths it lists (Landlock): nothing else can be read, written or
	// executed.
	Filesystem *Filesystem `json:"filesystem,omitempty"`
}

// Filesystem lists the paths a confined process may use (absolute). Its
// executable, its private HOME and TMPDIR, the system's shared libraries
// (/lib, /lib64, /usr/lib, /usr/lib64, /etc/ld.so.cache) and /dev/null,
// /dev/zero and /dev/urandom are added, so that a program can start;
// everything else must be listed.
type Filesystem struct {
	// Read are files and folders that may be read and executed.
	Read []string `json:"read,omitempty"`
	// Write are files and folders that may be read, written, created and
	// removed too.
	Write []string `json:"write,omitempty"`
}

// Limits bound a process's resources. MemoryMB and Processes count the
// process and everything it starts; CPUSeconds and OpenFiles are per
// process, like the rlimits behind them.
type Limits struct {
	// MemoryMB caps the memory of the process and everything it starts,
	// in MiB, through a memory cgroup: every kind (heap, shared mappings,
	// tmpfs, page cache), swap excluded. Past it the kernel's OOM killer
	// ends the process (the whole group with cgroup v2), and the host
	// restarts it. Where no memory cgroup is writable it is RLIMIT_DATA,
	// per process, which shared mappings escape (Isolation warns).
	MemoryMB int64 `json:"memory_mb,omitempty"`
	// CPUSeconds caps CPU time over the process's life (RLIMIT_CPU); past
	// it the kernel kills the process, and the host restarts it.
	CPUSeconds int64 `json:"cpu_seconds,omitempty"`
	// OpenFiles caps file descriptors (RLIMIT_NOFILE).
	OpenFiles int64 `json:"open_files,omitempty"`
	// Processes caps the tasks (processes and threads) of the process and
	// its descendants, through a cgroup's pids.max.
	Processes int64 `json:"processes,omitempty"`
}

// any reports whether some limit is set.
func (l Limits) any() bool {
	return l.MemoryMB > 0 || l.CPUSeconds > 0 || l.OpenFiles > 0 || l.Processes > 0
}

// baseEnv are the host variables every process gets: what a program needs
// to find commands and format text, and no more.
var baseEnv = []string{"PATH", "LANG", "LC_ALL", "TZ"}

// Spec is one process to start.
type Spec struct {
	// Name identifies the process in errors and in its private folder's
	// name ("weather", "mcp.files").
	Name string
	// Key is the config path of the profile ("plugins[0]"), so an error
	// names the key to change ("plugins[0].network").
	Key string
	// Path is the executable (absolute, or found in PATH) and Args its
	// arguments, without the program name.
	Path string
	Args []string
	// Dir is the working directory ("" for the host's).
	Dir string
	// Profile is what the process may have.
	Profile Profile
	// Extra are KEY=VALUE variables the caller itself needs to pass (a
	// plugin handshake's); they are set after the profile's.
	Extra []string
	// Deny names host variables that are never passed, whatever the
	// profile says: the API's tokens, the model key, the store's DSN.
	Deny []string
	// HomeIn is the folder the private HOME and TMPDIR are made in (""
	// for HostDir). A plugin's goes in its socket folder, which the plugin
	// removes itself when its host dies.
	HomeIn string
	// Trampoline is the executable that sandboxes the process and stays
	// as its init: a program that imports this package (every tenxgraph
	// binary does), run with ExecArg. Without it the process
	// gets only its environment, private folder, process group and
	// account, and limits, filesystem and network "none" are refused.
	Trampoline string
}

// key joins the spec's config path and a profile key for an error.
func (s *Spec) key(k string) string {
	if s.Key == "" {
		return k
	}
	return s.Key + "." + k
}

// Environ is the environment the process gets, home being its private
// HOME and TMPDIR. Extra comes last.
func (s *Spec) Environ(home string) ([]string, error) {
	set := map[string]string{}
	var order []string
	put := func(k, v string) {
		if _, ok := set[k]; !ok {
			order = append(order, k)
		}
		set[k] = v
	}
	for _, k := range baseEnv {
		if v, ok := os.LookupEnv(k); ok {
			put(k, v)
		}
	}
	if home != "" {
		put("HOME", home)
		put("TMPDIR", home)
	}
	keys := make([]string, 0, len(s.Profile.Env))
	for k := range s.Profile.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		put(k, s.Profile.Env[k])
	}
	for _, k := range s.Profile.PassEnv {
		if slices.Contains(s.Deny, k) {
			return nil, fmt.Errorf("%s: %s holds a secret of the host (an API token, the model key or the store's DSN) and is never passed to a provider", s.key("pass_env"), k)
		}
		if v, ok := os.LookupEnv(k); ok {
			put(k, v)
		}
	}
	env := make([]string, 0, len(order)+len(s.Extra))
	for _, k := range order {
		env = append(env, k+"="+set[k])
	}
	return append(env, s.Extra...), nil
}

// Describe is the profile in one line, as `tenxgraph tools` shows it.
func (p Profile) Describe() string {
	var parts []string
	env := "env: " + strings.Join(baseEnv, " ") + " HOME TMPDIR(private)"
	for _, k := range p.PassEnv {
		env += " +" + k
	}
	keys := make([]string, 0, len(p.Env))
	for k := range p.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env += " " + k + "=…"
	}
	parts = append(parts, env)
	net := p.Network
	if net == "" {
		net = NetworkHost
	}
	parts = append(parts, "network: "+net)
	var lim []string
	if p.Limits.MemoryMB > 0 {
		lim = append(lim, fmt.Sprintf("memory %d MiB", p.Limits.MemoryMB))
	}
	if p.Limits.CPUSeconds > 0 {
		lim = append(lim, fmt.Sprintf("cpu %d s", p.Limits.CPUSeconds))
	}
	if p.Limits.OpenFiles > 0 {
		lim = append(lim, fmt.Sprintf("open files %d", p.Limits.OpenFiles))
	}
	if p.Limits.Processes > 0 {
		lim = append(lim, fmt.Sprintf("processes %d", p.Limits.Processes))
	}
	if len(lim) == 0 {
		lim = append(lim, "none")
	}
	parts = append(parts, "limits: "+strings.Join(lim, ", "))
	if fs := p.Filesystem; fs != nil {
		parts = append(parts, fmt.Sprintf("filesystem: read %s; write %s", listOrNone(fs.Read), listOrNone(fs.Write)))
	} else {
		parts = append(parts, "filesystem: the account's")
	}
	if p.User != "" {
		u := p.User
		if p.Group != "" {
			u += ":" + p.Group
		}
		parts = append(parts, "user: "+u)
	}
	return strings.Join(parts, "; ")
}

func listOrNone(paths []string) string {
	if len(paths) == 0 {
		return "nothing listed"
	}
	return strings.Join(paths, " ")
}

// safeName keeps a name usable in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s)
}
