package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/config"
)

// `tenxgraph schema` prints the config's JSON Schema, and a config that
// names it in "$schema", as editors want, validates.
func TestSchemaCommand(t *testing.T) {
	code, out, errs := run(t, "", "schema")
	if code != 0 {
		t.Fatalf("schema: exit %d\n%s", code, errs)
	}
	var s struct {
		Schema     string                     `json:"$schema"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("schema printed no JSON: %v\n%s", err, out)
	}
	if s.Schema != config.SchemaID || s.Properties["mcp_servers"] == nil || s.Properties["$schema"] == nil {
		t.Errorf("schema %q with keys %v", s.Schema, s.Properties)
	}

	cfg := quickstart(t)
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	schemaFile := filepath.Join(filepath.Dir(cfg), "10xgraph.schema.json")
	if err := os.WriteFile(schemaFile, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	withKey := strings.Replace(string(data), "{", `{"$schema": "./10xgraph.schema.json",`, 1)
	if err := os.WriteFile(cfg, []byte(withKey), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "", "validate", "--config", cfg); code != 0 || !strings.Contains(out, "is valid") {
		t.Fatalf("a config with $schema: exit %d\n%s%s", code, out, errs)
	}
	bad := strings.Replace(string(data), "{", `{"$schema": 1,`, 1)
	if err := os.WriteFile(cfg, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "", "validate", "--config", cfg); code != 1 || !strings.Contains(errs, `["$schema"]: must be a string`) {
		t.Fatalf("a $schema that is not a string: exit %d\n%s", code, errs)
	}
}
