package main

import (
	"bufio"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/internal/proctest"
)

var (
	hostileOnce sync.Once
	hostileDir  string
	hostileErr  error
)

// hostileBin builds the hostile test plugin once, in a folder every
// account may read, next to a copy of this test binary (which is the
// tenxgraph binary when asked): both may be run as another user.
func hostileBin(t *testing.T) (bin, self string) {
	t.Helper()
	hostileOnce.Do(func() {
		if hostileDir, hostileErr = os.MkdirTemp("", "hostile"); hostileErr != nil {
			return
		}
		cleanups = append(cleanups, func() { os.RemoveAll(hostileDir) })
		_ = os.Chmod(hostileDir, 0o755)
		if out, err := exec.Command("go", "build", "-o", filepath.Join(hostileDir, "hostile"), "../../host/service/testdata/hostile").CombinedOutput(); err != nil {
			hostileErr = err
			t.Logf("%s", out)
			return
		}
		raw, err := os.ReadFile(os.Args[0])
		if err == nil {
			err = os.WriteFile(filepath.Join(hostileDir, "tenxgraph"), raw, 0o755)
		}
		hostileErr = err
	})
	if hostileErr != nil {
		t.Fatalf("build the hostile plugin: %v", hostileErr)
	}
	return filepath.Join(hostileDir, "hostile"), filepath.Join(hostileDir, "tenxgraph")
}

// served is a running `tenxgraph serve`.
type served struct {
	cmd   *exec.Cmd
	addr  string
	token string
}

// serve starts `tenxgraph serve` on the config in dir with env added to
// this test's environment, as cred's account when set, and waits until
// it listens.
func serve(t *testing.T, dir string, env []string, cred *syscall.Credential) *served {
	t.Helper()
	_, self := hostileBin(t)
	srv := exec.Command(self, "serve", "--config", filepath.Join(dir, "10xgraph.json"), "--addr", "127.0.0.1:0")
	srv.Env = append(append(os.Environ(), "TENXGRAPH_BE_MAIN=1"), env...)
	if cred != nil {
		srv.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		srv.Dir = dir
	}
	stdout, _ := srv.StdoutPipe()
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	sc := bufio.NewScanner(stdout)
	s := &served{cmd: srv}
	for sc.Scan() {
		if m := regexp.MustCompile(`http://(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			s.addr = m[1]
			break
		}
	}
	if s.addr == "" {
		t.Fatal("serve did not say where it listens")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return s
}

// toolResult runs one turn on a new thread and returns the content of
// its one tool result, and whether it is an error.
func (s *served) toolResult(t *testing.T, text string) (string, bool) {
	t.Helper()
	body := `{"input": {"messages": [{"role": "user", "content": ` + strconv.Quote(text) + `}]}, "config": {"thread_id": "t` + strconv.FormatInt(time.Now().UnixNano(), 36) + `"}}`
	req, _ := http.NewRequest("POST", "http://"+s.addr+"/v1/graph/invoke", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("invoke %q: %d %s", text, resp.StatusCode, raw)
	}
	var out struct {
		Messages []struct {
			Content []struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
				IsError bool            `json:"is_error"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	for _, m := range out.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				return string(b.Content), b.IsError
			}
		}
	}
	t.Fatalf("invoke %q: no tool result in %s", text, raw)
	return "", false
}

// hostileConfig writes a config with the hostile plugin (default profile
// but for its mark), a sibling holding a secret of its own, and the
// hostile MCP server, in a folder every account may read.
func hostileConfig(t *testing.T, mark, extra string, find []string) string {
	t.Helper()
	bin, _ := hostileBin(t)
	dir, err := os.MkdirTemp("", "hostile-config") // t.TempDir's parent is 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	rules := `{"rules": [
	  {"match": "^snoop$", "tool_calls": [{"name": "snoop", "arguments": {"find": ` + jsonOf(find) + `}}]},
	  {"match": "^escape5$", "tool_calls": [{"name": "escape", "arguments": {"n": 5}}]},
	  {"match": "^dial (.*)$", "tool_calls": [{"name": "s_dial", "arguments": {"addr": "$1"}}]}]}`
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(rules), 0o644)
	os.WriteFile(filepath.Join(dir, "10xgraph.json"), []byte(`{"agent": "tenxgraph:react",
	  "model": {"provider": "scripted", "script": "script.json"}, "checkpointer": {"type": "memory"}`+extra+`,
	  "plugins": [{"name": "hostile", "command": ["`+bin+`"], "env": {"HOSTILE_MARK": "`+mark+`"}},
	              {"name": "sibling", "command": ["`+bin+`"], "prefix": "s_", "network": "none", "env": {"SIBLING_SECRET": "sibling-`+mark+`"}}],
	  "mcp_servers": {"evil": {"command": "`+bin+`", "args": ["mcp"], "env": {"HOSTILE_MARK": "`+mark+`-mcp"}}}}`), 0o644)
	return dir
}

func jsonOf(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// hostSecrets are real-looking secrets for serve's environment: a bearer
// token (tokens_env), the model key, the store's DSN and libpq's password.
func hostSecrets(mark string) (env, values []string) {
	for _, kv := range [][2]string{{"TENXGRAPH_TOKEN", "tok-"}, {"OPENAI_API_KEY", "sk-"}, {"DATABASE_URL", "postgres://app:pw-"}, {"PGPASSWORD", "pg-"}} {
		v := kv[1] + mark
		env, values = append(env, kv[0]+"="+v), append(values, v)
	}
	return env, values
}

// snooped runs the hostile plugin's snoop through s and checks it read
// something, and none of find.
func snooped(t *testing.T, s *served) {
	t.Helper()
	out, isErr := s.toolResult(t, "snoop")
	if isErr {
		t.Fatalf("snoop: %s", out)
	}
	var got struct {
		Seen, Environs int
		Found          []string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("snoop: %v: %s", err, out)
	}
	if got.Environs == 0 {
		t.Fatalf("snoop read no environment at all, not even its own: %s", out)
	}
	if len(got.Found) > 0 {
		t.Fatalf("a plugin with the default profile read secrets: %v", got.Found)
	}
	t.Logf("the plugin saw %d processes, read %d environments, found no secret", got.Seen, got.Environs)
}

// A plugin with the default profile under a real serve finds none of the
// host's secrets (its bearer token, the model key, the DSN, PGPASSWORD)
// nor its sibling's in any /proc/*/environ or /proc/*/cmdline it can see,
// or in its own environment.
func TestServeKeepsItsSecrets(t *testing.T) {
	mark := "keep" + strconv.Itoa(os.Getpid())
	env, find := hostSecrets(mark)
	dir := hostileConfig(t, mark, `, "server": {"auth": {"tokens_env": ["TENXGRAPH_TOKEN"]}}`, append(find, "sibling-"+mark))
	s := serve(t, dir, env, nil)
	s.token = "tok-" + mark
	snooped(t, s)
}

// Run as an ordinary account (no PID namespace: Landlock and a host that
// is not dumpable keep the secrets), the same holds, and network "none"
// still works: the init, not the non-dumpable host, writes the user
// namespace's uid_map.
func TestServeAsAnotherUserKeepsItsSecrets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root to start serve as nobody")
	}
	mark := "nobody" + strconv.Itoa(os.Getpid())
	env, find := hostSecrets(mark)
	dir := hostileConfig(t, mark, `, "server": {"auth": {"tokens_env": ["TENXGRAPH_TOKEN"]}}`, append(find, "sibling-"+mark))
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o777)
	os.Chmod(tmp, 0o777|os.ModeSticky)
	s := serve(t, dir, append(env, "TMPDIR="+tmp, "HOME="+tmp), &syscall.Credential{Uid: 65534, Gid: 65534})
	s.token = "tok-" + mark
	snooped(t, s)
	// The sibling has network "none": its own loopback is down.
	out, isErr := s.toolResult(t, "dial "+s.addr)
	if !isErr || !strings.Contains(out, "network is unreachable") {
		t.Fatalf("a plugin with network none dialling the host's address: want it unreachable, got %s", out)
	}
	// No PID namespace and no cgroup here: the plugin's init holds its
	// tree. Children that left the plugin's session die with serve killed
	// with SIGKILL all the same.
	t.Cleanup(func() {
		for _, pid := range escapees(mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if out, isErr := s.toolResult(t, "escape5"); isErr {
		t.Fatalf("escape: %s", out)
	}
	if n := len(escapees(mark)); n != 5 {
		t.Fatalf("%d escaped children run, want 5", n)
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	waitFor(t, 10*time.Second, "no escaped child is left after SIGKILL of serve", func() bool { return len(escapees(mark)) == 0 })
}

// escapees lists the live processes marked mark that left their
// plugin's session.
func escapees(mark string) []int {
	var out []int
	for _, pid := range proctest.Marked("HOSTILE_MARK", mark) {
		raw, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if strings.Contains(string(raw), "\x00HOSTILE_ESCAPEE=1\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// startEscapes starts serve and makes the hostile plugin start 5
// children that leave its process group and session.
func startEscapes(t *testing.T, mark string) (*served, string) {
	t.Helper()
	dir := hostileConfig(t, mark, "", nil)
	s := serve(t, dir, nil, nil)
	t.Cleanup(func() {
		for _, pid := range escapees(mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if out, isErr := s.toolResult(t, "escape5"); isErr {
		t.Fatalf("escape: %s", out)
	}
	if n := len(escapees(mark)); n != 5 {
		t.Fatalf("%d escaped children run, want 5", n)
	}
	return s, dir
}

// Children that left their plugin's group and session end when serve
// stops on SIGTERM.
func TestServeSIGTERMEndsEscapedChildren(t *testing.T) {
	mark := "escterm" + strconv.Itoa(os.Getpid())
	s, _ := startEscapes(t, mark)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
	waitFor(t, 10*time.Second, "no escaped child is left after SIGTERM", func() bool { return len(escapees(mark)) == 0 })
}

// After serve is killed with SIGKILL and started again, no escaped child
// of the dead host runs, and none of its cgroups is left.
func TestServeSIGKILLThenStartLeavesNothing(t *testing.T) {
	mark := "esckill" + strconv.Itoa(os.Getpid())
	s, dir := startEscapes(t, mark)
	dead := s.cmd.Process.Pid
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	serve(t, dir, nil, nil)
	waitFor(t, 10*time.Second, "no escaped child of the killed host is left", func() bool { return len(escapees(mark)) == 0 })
	if left := cgroupsOf(dead); len(left) > 0 {
		t.Fatalf("the killed host's cgroups are left after a new start: %v", left)
	}
}

// cgroupsOf lists the cgroups the host with pid made, in every mounted
// hierarchy.
func cgroupsOf(pid int) []string {
	var out []string
	prefix := "tenxgraph-" + strconv.Itoa(pid) + "-"
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), prefix) {
			out = append(out, path)
			return fs.SkipDir
		}
		return nil
	})
	return out
}
