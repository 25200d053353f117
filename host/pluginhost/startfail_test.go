package pluginhost_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/pluginhost"
)

// A plugin that panics before its handshake is reported with its exit
// status and its panic, not go-plugin's "Unrecognized remote plugin
// message" and a hint about architectures.
func TestStartFailureSaysHowThePluginDied(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "crashplugin")
	if out, err := exec.Command("go", "-C", "../../sdk", "build", "-o", bin, "./sdktest/testdata/crashplugin").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	_, err := pluginhost.Start(context.Background(), pluginhost.Config{Name: "crash", Command: []string{bin}})
	if err == nil {
		t.Fatal("a plugin that panics at start started")
	}
	msg := err.Error()
	for _, want := range []string{`plugin "crash"`, "exited before its handshake", "exit status 2", "panic: the configuration file is missing", "pass_env"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q: %s", want, msg)
		}
	}
	for _, wrong := range []string{"Unrecognized remote plugin message", "architecture"} {
		if strings.Contains(msg, wrong) {
			t.Errorf("the error says %q, which points the wrong way: %s", wrong, msg)
		}
	}
}

// A restart refused by the sha256 pin is in the host's log, not only in the
// error a waiting call gets.
func TestSHA256RefusalOnRestartIsLogged(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pinned")
	data, err := os.ReadFile(testplugin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	p, l, _ := start(t, pluginhost.Config{Name: "pinned", Command: []string{bin}, SHA256: hex.EncodeToString(sum[:])})
	// The binary is replaced under the host, then the plugin dies.
	if err := os.WriteFile(bin+".new", append(data, "tampered"...), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(l.String(), "does not match the pinned sha256") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal in the host's log after 10s:\n%s", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := call(ctx, p, "echo", `{}`); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("a call after the refusal: %v", err)
	}
}

// A first start refused by the sha256 pin says so once, in the error its
// caller prints, and not again in the log.
func TestSHA256RefusalAtFirstStartIsSaidOnce(t *testing.T) {
	l := &logs{}
	_, err := pluginhost.Start(context.Background(), pluginhost.Config{Name: "pinned", Command: []string{testplugin},
		SHA256: strings.Repeat("0", 64), Logger: hclog.New(&hclog.LoggerOptions{Output: l, Level: hclog.Debug})})
	if err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("wrong pin: %v", err)
	}
	if strings.Contains(l.String(), "sha256") {
		t.Errorf("the refusal is in the log as well as in the error:\n%s", l)
	}
}
