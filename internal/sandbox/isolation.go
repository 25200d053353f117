package sandbox

import (
	"fmt"
	"strings"
)

// Isolation is what one provider process actually got from the kernel,
// as `tenxgraph tools` and `tenxgraph validate` report it. The new
// defaults (a PID namespace, a Landlock domain, a cgroup, a host that is
// not dumpable) are taken where the kernel has them; what it lacks makes
// a warning, not a failure.
type Isolation struct {
	// PIDNamespace: the process is in a PID namespace of its own, whose
	// init reaps and, when it ends, takes everything in it along.
	PIDNamespace bool
	// FreshProc: its /proc shows only its namespace: no other process's
	// environment or command line is there to read.
	FreshProc bool
	// Landlock is the ABI of the Landlock domain it runs in, 0 for none.
	// In a domain it cannot trace, or read through /proc, any process
	// outside (the host, its init, other providers); from ABI 6 it cannot
	// signal them or reach their abstract unix sockets either.
	Landlock int
	// Cgroup names the cgroups holding its whole process tree: "v2",
	// "v1", "v2+v1", or "" for none.
	Cgroup string
	// Memory is what enforces limits.memory_mb: "cgroup v2", "cgroup v1",
	// "RLIMIT_DATA", or "" when none is asked for.
	Memory string
	// Root: it runs as root, with every capability.
	Root bool
	// HostDumpable: the host can be traced and read by processes of its
	// account (it could not make itself non-dumpable).
	HostDumpable bool
	// Warnings say where it is weak, and why.
	Warnings []string
}

// String is the isolation in one line.
func (i Isolation) String() string {
	var parts []string
	switch {
	case i.PIDNamespace && i.FreshProc:
		parts = append(parts, "pid namespace with its own /proc")
	case i.PIDNamespace:
		parts = append(parts, "pid namespace")
	default:
		parts = append(parts, "no pid namespace")
	}
	switch {
	case i.Landlock >= 6:
		parts = append(parts, fmt.Sprintf("landlock ABI %d (ptrace, signals, abstract sockets scoped)", i.Landlock))
	case i.Landlock > 0:
		parts = append(parts, fmt.Sprintf("landlock ABI %d (ptrace scoped)", i.Landlock))
	default:
		parts = append(parts, "no landlock")
	}
	if i.Cgroup != "" {
		parts = append(parts, "cgroup "+i.Cgroup)
	} else {
		parts = append(parts, "no cgroup")
	}
	if i.Memory != "" {
		parts = append(parts, "memory_mb: "+i.Memory)
	}
	if i.HostDumpable {
		parts = append(parts, "host dumpable")
	} else {
		parts = append(parts, "host not dumpable")
	}
	if i.Root {
		parts = append(parts, "runs as root")
	}
	return strings.Join(parts, ", ")
}

// assess adds the warnings that follow from what the process got.
func assess(i Isolation) Isolation {
	seesHost := !i.FreshProc
	if seesHost && i.Landlock == 0 {
		if i.HostDumpable {
			i.Warnings = append(i.Warnings, "it can read the environment of the host (its secrets) and of every process of its account: no pid namespace, no Landlock, and the host is dumpable")
		} else {
			i.Warnings = append(i.Warnings, "it can read the environment of every process of its account but the host (other providers' secrets): no pid namespace and no Landlock")
		}
	}
	if i.Root {
		i.Warnings = append(i.Warnings, "it runs as root with every capability, which no sandbox contains (CAP_SYS_ADMIN reads other processes' environments despite Landlock; it may leave its cgroups): set user")
	}
	if !i.PIDNamespace && i.Cgroup == "" {
		w := "only its init holds its process tree: if the init is killed (the OOM killer, another process of the account), what the provider started outside its process group survives"
		if i.Landlock < 6 {
			w += ", and the provider itself can kill it (Landlock ABI 6 scopes signals)"
		}
		i.Warnings = append(i.Warnings, w)
	}
	if i.Landlock > 0 && i.Landlock < 6 && !i.PIDNamespace && i.Cgroup != "" {
		i.Warnings = append(i.Warnings, "it can signal every process of its account (Landlock signal scoping needs ABI 6, Linux 6.12)")
	}
	if i.Memory == "RLIMIT_DATA" {
		i.Warnings = append(i.Warnings, "limits.memory_mb is RLIMIT_DATA, for want of a writable memory cgroup: shared memory and tmpfs are not counted, and each process has its own")
	}
	return i
}
