package sandbox

// ExecArg is the first argument that makes a binary importing this
// package act as the trampoline: the package's init sets up the
// process's sandbox and starts the target, and the program's own main
// never runs. Every tenxgraph binary is a trampoline.
const ExecArg = "__tenxgraph-sandbox-exec"

// envTrampoline carries the trampoline's instructions. It is the
// trampoline's whole environment, and the target does not inherit it.
const envTrampoline = "TENXGRAPH_SANDBOX_EXEC"

// stageEnv is the whole environment of a stage: its instructions, and one
// processor for the Go runtime, so that the resident init costs few
// threads (each counts against pids.max) and little memory.
func stageEnv(instructions []byte) []string {
	return []string{envTrampoline + "=" + string(instructions), "GOMAXPROCS=1"}
}

// The two stages of the trampoline, the argument after ExecArg.
const (
	// stageInit stays for the life of the provider: it joins the
	// provider's cgroups, mounts a fresh /proc when it is the init of a
	// PID namespace of its own, starts stageExec, reaps every process
	// the provider leaves, and passes signals on.
	stageInit = "init"
	// stageExec applies the limits, the account and the Landlock domain
	// to itself, then becomes the target.
	stageExec = "exec"
	// stageProbe exits at once: the host starts it once in new PID and
	// mount namespaces to learn whether the kernel allows them.
	stageProbe = "probe"
)

// statusFD is the descriptor both stages report on: "warn\tMESSAGE",
// "fail\tMESSAGE" (the start failed; MESSAGE names the profile key),
// "proc" (a fresh /proc is mounted), "landlock\tABI". The host reads it
// until it closes, which happens when the target runs (or the start
// failed).
const statusFD = 3

// trampoline is what the stages do before the target runs.
type trampoline struct {
	// Key is the config path of the profile ("plugins[0]"), which errors
	// name.
	Key string `json:"key,omitempty"`
	// Self is the trampoline's executable, which the init runs again as
	// the exec stage (after the init's mount namespace changed, a path
	// through /proc cannot be trusted).
	Self   string   `json:"self"`
	Path   string   `json:"path"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	Limits Limits   `json:"limits"`
	// Cgroups are the folders of the cgroups the init joins, with the
	// key of the limit each carries ("" for one that only contains).
	Cgroups []cgroupJoin `json:"cgroups,omitempty"`
	// NProc is RLIMIT_NPROC, where the process limit is not a cgroup's.
	NProc int64 `json:"nproc,omitempty"`
	// PIDNS: the init is PID 1 of a new PID and mount namespace and
	// mounts a /proc that shows only them.
	PIDNS bool `json:"pidns,omitempty"`
	// NetNone: the exec stage gets a network namespace of its own, in a
	// user namespace of its own when UserNS (a host that is not root).
	NetNone bool `json:"net_none,omitempty"`
	UserNS  bool `json:"userns,omitempty"`
	// UID and GID, when set, are the account the exec stage switches to.
	UID *uint32 `json:"uid,omitempty"`
	GID *uint32 `json:"gid,omitempty"`
	// Landlock puts the target in a Landlock domain of its own where the
	// kernel has Landlock: processes outside it (the host, the init,
	// other providers) can be neither traced nor read through /proc, and
	// from ABI 6 neither signalled nor reached on abstract sockets.
	Landlock bool `json:"landlock,omitempty"`
	// FS, Read and Write are a Filesystem confinement, with what every
	// process needs added; FS false for none.
	FS    bool     `json:"fs,omitempty"`
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

// cgroupJoin is one cgroup the init joins.
type cgroupJoin struct {
	Dir string `json:"dir"`
	// Key is the limit it enforces ("limits.memory_mb"); "" for a cgroup
	// that only contains the process tree, which may be refused with a
	// warning.
	Key string `json:"key,omitempty"`
}
