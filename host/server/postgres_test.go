package server_test

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresDSNEnv names the DSN of a PostgreSQL server the tests may create
// schemas in; scripts/test.sh starts a throwaway server and sets it.
const postgresDSNEnv = "TENXGRAPH_TEST_POSTGRES_DSN"

// postgresDSN returns a DSN whose search_path is a new, empty schema,
// dropped when the test ends, or skips the test when no server is
// configured.
func postgresDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(postgresDSNEnv)
	if dsn == "" {
		t.Skipf("no PostgreSQL server: set %s to a DSN (scripts/test.sh starts one) to run this test on PostgreSQL", postgresDSNEnv)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", postgresDSNEnv, err)
	}
	defer conn.Close(ctx)
	schema := "tenxgraph_server_" + strings.ToLower(rand.Text())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("connect to drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}
