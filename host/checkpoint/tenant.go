package checkpoint

import "strings"

// A store knows threads by one string, their key. Threads of different
// tenants (the API server's tokens) may have the same id, so the key of a
// tenant's thread names the tenant too: two tenants' threads of one id are
// two threads, whatever the store does with them (checkpoints, logs,
// claims, leases, wake-ups, idle sweeps), and no operation on one tells
// anything about the other. Whatever else is kept per thread (a thread's
// blobs, a node's memo: see graph.Run.Key) is keyed by it too.
//
// The key of a thread of the tenant "" (a server without tokens, the CLI,
// code that has no tenants) is its id, as before tenants existed, so such
// stores need no migration. The key of any other tenant's thread is the
// tenant, TenantSeparator and the id. A tenant never contains the
// separator, and the graph engine refuses it in the ids of the tenant "",
// so the key names one tenant and one id, and SplitThreadKey gets both
// back.

// TenantSeparator separates the tenant from the thread id in a thread's
// key: U+001F, the ASCII unit separator, which no token name (an
// environment variable's name) and no thread id a client may send
// contains. In SQL it is char(31) (SQLite) or chr(31) (PostgreSQL):
//
//	SELECT seq, status FROM tenxgraph_checkpoints WHERE thread_id = 'TENXGRAPH_TOKEN_ALICE' || chr(31) || 't1'
const TenantSeparator = "\x1f"

// ThreadKey returns the key the thread id of tenant is stored under: id
// for the tenant "", else tenant + TenantSeparator + id.
func ThreadKey(tenant, id string) string {
	if tenant == "" {
		return id
	}
	return tenant + TenantSeparator + id
}

// SplitThreadKey returns the tenant and the thread id a key names (see
// ThreadKey): the tenant is what precedes the first TenantSeparator, ""
// when there is none. It undoes ThreadKey for every tenant without the
// separator, and for ids of the tenant "" without it.
func SplitThreadKey(key string) (tenant, id string) {
	if t, id, ok := strings.Cut(key, TenantSeparator); ok {
		return t, id
	}
	return "", key
}
