package sandbox

// ExecArg is the first argument that makes a tenxgraph binary act as the
// trampoline: Exec applies the limits, then becomes the target. A program
// that starts providers with limits (every tenxgraph binary) checks for it
// first thing in main.
const ExecArg = "__tenxgraph-sandbox-exec"

// envTrampoline carries the trampoline's instructions. It is the
// trampoline's whole environment, and the target does not inherit it.
const envTrampoline = "TENXGRAPH_SANDBOX_EXEC"

// trampoline is what Exec does before it becomes the target.
type trampoline struct {
	Path   string   `json:"path"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	Limits Limits   `json:"limits"`
	// Cgroup is the folder of the cgroup to join, or "".
	Cgroup string `json:"cgroup,omitempty"`
	// NProc is RLIMIT_NPROC, where the process limit is not a cgroup's.
	NProc int64 `json:"nproc,omitempty"`
	// Read and Write are the paths of a Filesystem confinement, with what
	// every process needs added; nil for none.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	FS    bool     `json:"fs,omitempty"`
}
