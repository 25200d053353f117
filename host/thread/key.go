package thread

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
)

// MaxThreadIDLen bounds a thread id, in characters (Unicode code points).
const MaxThreadIDLen = 256

// CheckThreadID says what is wrong with a thread id, naming it by at (its
// path in the request, such as "config.thread_id"), wrapping
// graph.ErrInvalidInput; or returns nil. An id is 1 to MaxThreadIDLen
// characters of valid UTF-8 without U+FFFD: decoders put U+FFFD in place of
// bytes that are not text, so two different ids sent as such would land on
// one thread. Nor may it hold a control character (C0 with NUL, DEL, C1):
// stores disagree on them (SQLite keeps a NUL, PostgreSQL refuses one), and
// they would reach logs and terminals as they are. This is the one rule of
// every store, applied before any store sees the id.
func CheckThreadID(at, id string) error {
	switch n := utf8.RuneCountInString(id); {
	case id == "":
		return invalid("%s: required, 1 to %d characters", at, MaxThreadIDLen)
	case !utf8.ValidString(id):
		return invalid("%s: must be valid UTF-8", at)
	case strings.ContainsRune(id, utf8.RuneError):
		return invalid("%s: must not contain U+FFFD (the replacement character, which stands for bytes that were not text)", at)
	case n > MaxThreadIDLen:
		return invalid("%s: at most %d characters, got %d", at, MaxThreadIDLen, n)
	}
	if i := strings.IndexFunc(id, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(id[i:])
		return invalid("%s: must not contain control characters, got U+%04X at character %d", at, r, utf8.RuneCountInString(id[:i])+1)
	}
	return nil
}

// keyOf checks a thread id, naming it by at, and returns the key the
// thread id of tenant is stored under (checkpoint.ThreadKey). It is the one
// way from a caller's thread to the store's: threads of different tenants
// are different keys, so that to every operation (runs, reads, deletes,
// claims, wake-ups) another tenant's thread is exactly a thread that does
// not exist, without a check that could be forgotten. No id contains the
// separator of the key, so a key names one tenant and one id.
func keyOf(at, tenant, id string) (string, error) {
	if err := CheckThreadID(at, id); err != nil {
		return "", err
	}
	if strings.Contains(id, checkpoint.TenantSeparator) {
		return "", invalid("%s: must not contain U+001F (the unit separator)", at)
	}
	if !utf8.ValidString(tenant) || strings.Contains(tenant, checkpoint.TenantSeparator) {
		return "", fmt.Errorf("tenant %q: must be valid UTF-8 without U+001F", tenant)
	}
	return checkpoint.ThreadKey(tenant, id), nil
}

// idOf is the id the thread of key has for its tenant, for messages.
func idOf(key string) string {
	_, id := checkpoint.SplitThreadKey(key)
	return id
}

// notFound is the answer for a thread that does not exist, which is also
// the answer for another tenant's.
func notFound(threadID string) error {
	return fmt.Errorf("thread %q: %w", threadID, graph.ErrThreadNotFound)
}

// busy is the answer for a thread another run of its tenant holds.
func busy(key, detail string) error {
	return &graph.StateError{Kind: graph.ErrThreadBusy, ThreadID: idOf(key), Detail: detail}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", graph.ErrInvalidInput, fmt.Sprintf(format, args...))
}
