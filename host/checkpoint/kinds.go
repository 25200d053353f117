package checkpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DefaultSQLitePath is the sqlite store's file when the config names
// none, relative to the config's folder, so state stays with the project
// rather than with the shell's current directory.
const DefaultSQLitePath = ".tenxgraph/state.db"

// postgresSecrets are the libpq variables holding a password, which the
// postgres store's driver (pgx) reads as libpq does when the DSN has none.
var postgresSecrets = []string{"PGPASSWORD", "PGSSLPASSWORD"}

// The stores of this package, in the order messages list them.
func init() {
	RegisterKind(Kind{
		Name: "sqlite", Rank: 10, Default: true, Summary: "embedded, survives restarts",
		Own: []string{"path"},
		Refuse: func(key, other string) string {
			return fmt.Sprintf("only used when type is \"sqlite\" (the %s checkpointer has no file)", other)
		},
		Settle: func(c *Config, resolve func(string) string) {
			c.Path = resolve(cmp.Or(c.Path, DefaultSQLitePath))
		},
		Open: func(ctx context.Context, c Config, opts ...Option) (Checkpointer, error) {
			if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
				return nil, fmt.Errorf("checkpointer.path: %w", err)
			}
			return opened(OpenSQLite(ctx, c.Path, opts...))
		},
	})
	RegisterKind(Kind{
		Name: "memory", Rank: 20, Summary: "lost on exit",
		Open: func(_ context.Context, _ Config, opts ...Option) (Checkpointer, error) {
			return NewMemory(opts...), nil
		},
	})
	RegisterKind(Kind{
		Name: "postgres", Rank: 30,
		Own: []string{"dsn_env"}, Needs: []string{"dsn_env"},
		Secrets: func(c Config) []string {
			if c.DSNEnv == "" {
				return postgresSecrets
			}
			return append([]string{c.DSNEnv}, postgresSecrets...)
		},
		Open: openPostgresDSNEnv,
	})
}

// openPostgresDSNEnv opens the postgres store whose DSN is in the environment
// variable dsn_env names: the DSN carries a password, so the config names
// a variable rather than holding it.
func openPostgresDSNEnv(ctx context.Context, c Config, opts ...Option) (Checkpointer, error) {
	if c.DSNEnv == "" {
		return nil, errors.New("checkpointer.dsn_env: missing: name the environment variable that holds the postgres DSN")
	}
	dsn := os.Getenv(c.DSNEnv)
	if dsn == "" {
		return nil, fmt.Errorf("checkpointer.dsn_env: environment variable %s is empty or unset; set it to the postgres DSN (such as postgres://user:password@host:5432/db)", c.DSNEnv)
	}
	return opened(OpenPostgres(ctx, dsn, opts...))
}
