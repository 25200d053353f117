// Package config reads 10xgraph.json strictly: an unknown key, a duplicate
// key or a value of the wrong type is an error, and every error in the file
// is reported at once with its JSON path ("remote_tools[1].parameters"). A
// config that loads is one the host can start from without guessing; a
// misspelt key that is silently ignored is a setting the user believes in
// and does not have.
//
// Config holds what the file says, with defaults filled in and relative
// paths made absolute. Checks that need more than the file (that a graph
// node exists, that a plugin's binary matches its sha256, that environment
// variables are set) belong to the parts that use the values.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Load reads and parses the config file at path.
func Load(path string) (*Config, error) {
	data, dir, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, dir)
}

// LoadPartial is Load for the validate command, which reports every
// problem at once, those it finds with the graph included: it returns the
// config as far as it could be read along with the file's problems (see
// Check). err is for a file that cannot be read.
func LoadPartial(path string) (*Config, toolspec.Problems, error) {
	data, dir, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, ps := Check(data, dir)
	return cfg, ps, nil
}

func readFile(path string) (data []byte, dir string, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", fmt.Errorf("config %s: %w", path, err)
	}
	data, err = os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("no config file at %s: create one there (a small one is {\"agent\": \"tenxgraph:react\", \"model\": {\"provider\": \"openai\", \"model\": \"gpt-4o-mini\"}}) or pass --config with the path of yours: %w", abs, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read config: %w", err)
	}
	return data, filepath.Dir(abs), nil
}

// Parse decodes and validates a config whose file is in dir. On failure the
// error is a toolspec.Problems listing every problem found.
func Parse(data []byte, dir string) (*Config, error) {
	cfg, ps := Check(data, dir)
	if len(ps) > 0 {
		return nil, ps
	}
	return cfg, nil
}

// Check decodes and validates a config whose file is in dir, and returns
// every problem found together with the config as far as it could be read:
// a value with a problem is left at its default. The config is nil only
// when the data is not a JSON object. Use it to go on checking what needs
// more than the file (the graph's nodes) before reporting; start nothing
// from a config that has problems.
func Check(data []byte, dir string) (*Config, toolspec.Problems) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, toolspec.Problems{{Message: fmt.Sprintf("config folder %q: %v", dir, err)}}
	}
	c := &checker{dir: abs}
	root := parse(data, &c.ps)
	if root == nil {
		return nil, c.ps
	}
	if root.kind != kindObject {
		c.add("", "the config must be a JSON object, got %s", root.kind)
		return nil, c.ps
	}
	c.validate(root)
	cfg := &Config{Dir: abs}
	for _, first := range []bool{true, false} {
		for _, s := range ordered() {
			if s.First == first {
				s.read(c, s.Key, root.field(s.Key), cfg)
			}
		}
	}
	c.checkSecrets(cfg)
	return cfg, c.problems(root)
}
