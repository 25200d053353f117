// Package layers holds the test of the repository's import rules: the SDK
// is a leaf a plugin author can depend on without the host, plugins depend
// on the SDK and not on the host, and the config loader knows no provider.
package layers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tenxgraph/tenxgraph"

// root is the repository's root: this file is in internal/layers.
func root(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot find this file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

type pkg struct {
	ImportPath   string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

// list runs `go list -deps=false -json` on patterns in dir, with each
// package's transitive dependencies and its tests' direct imports.
func list(t *testing.T, dir string, patterns ...string) []pkg {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the import rules are read with the go command: %v", err)
	}
	// -mod=readonly whatever GOFLAGS says: reading the import graph must
	// not write the repository's go.sum.
	cmd := exec.Command(gobin, append([]string{"list", "-mod=readonly", "-json=ImportPath,Deps,TestImports,XTestImports"}, patterns...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s in %s: %v\n%s", strings.Join(patterns, " "), dir, err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %s in %s: no packages", strings.Join(patterns, " "), dir)
	}
	return pkgs
}

// under reports whether path is the package dir of the module or below it.
func under(path, dir string) bool {
	p := module + "/" + dir
	return path == p || strings.HasPrefix(path, p+"/")
}

// check reports every package of pkgs that reaches a forbidden package.
func check(t *testing.T, pkgs []pkg, rule string, forbidden func(string) bool) {
	t.Helper()
	for _, p := range pkgs {
		var bad []string
		for _, d := range slices.Concat(p.Deps, p.TestImports, p.XTestImports) {
			if forbidden(d) && !slices.Contains(bad, d) {
				bad = append(bad, d)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s: %s imports %s", rule, p.ImportPath, strings.Join(bad, ", "))
		}
	}
}

func TestSDKImportsNothingOfTheHost(t *testing.T) {
	pkgs := list(t, filepath.Join(root(t), "sdk"), "./...")
	check(t, pkgs, "the SDK must not import the host or the plugins", func(d string) bool {
		return strings.HasPrefix(d, module+"/") && !under(d, "sdk")
	})
}

func TestPluginsDoNotImportTheHost(t *testing.T) {
	pkgs := list(t, root(t), "./plugins/...")
	check(t, pkgs, "plugins/ must not import host/", func(d string) bool { return under(d, "host") })
}

func TestConfigDoesNotImportPlugins(t *testing.T) {
	pkgs := list(t, root(t), "./host/config/...")
	check(t, pkgs, "host/config must not import plugins/", func(d string) bool { return under(d, "plugins") })
}

// The config loader sits below the engine it configures, and the model
// providers below the loader: each reads plain values (decl.RemoteTool,
// model.Config), not the other's types.
func TestConfigAndModelsStayBelow(t *testing.T) {
	check(t, list(t, root(t), "./host/config/..."), "host/config must not import the engine (host/graph)", func(d string) bool { return under(d, "host/graph") })
	check(t, list(t, root(t), "./host/model/..."), "host/model must not import the config loader", func(d string) bool { return under(d, "host/config") })
}

// TestAPluginModuleNeedsOnlyTheSDK builds a plugin in a module of its own
// whose go.mod requires only the SDK, as a plugin author's does, and checks
// that the host's heavy dependencies stay out of its module graph.
func TestAPluginModuleNeedsOnlyTheSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("needs the go command: %v", err)
	}
	sdkDir, err := filepath.Abs(filepath.Join(root(t), "sdk"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", fmt.Sprintf("module example.com/echo\n\ngo 1.26.0\n\nrequire %s/sdk v0.0.0\n\nreplace %s/sdk => %s\n", module, module, sdkDir))
	write("main.go", `package main

import (
	"context"

	"github.com/tenxgraph/tenxgraph/sdk"
)

type args struct {
	Text string `+"`json:\"text\"`"+`
}

func main() {
	sdk.Serve(sdk.MustTools("echo", "1.0.0", sdk.MustTool("echo", "Echo the text.",
		func(ctx context.Context, in args) (args, error) {
			sdk.Logger(ctx).Info("echo", "text", in.Text)
			return in, nil
		})))
}
`)
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	run("mod", "tidy")
	run("build", "-o", filepath.Join(dir, "echo"), ".")
	out := run("list", "-m", "all")
	sc := bufio.NewScanner(bytes.NewReader(out))
	var mods []string
	for sc.Scan() {
		mods = append(mods, strings.Fields(sc.Text())[0])
	}
	for _, heavy := range []string{"github.com/jackc/pgx/v5", "modernc.org/sqlite", "github.com/prometheus/client_golang",
		"github.com/openai/openai-go/v3", "github.com/spf13/cobra", module} {
		if slices.Contains(mods, heavy) {
			t.Errorf("a plugin's module graph holds %s:\n%s", heavy, out)
		}
	}
	if !slices.Contains(mods, module+"/sdk") {
		t.Errorf("the module graph lacks the SDK:\n%s", out)
	}
}
