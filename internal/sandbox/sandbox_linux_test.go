package sandbox

import (
	"github.com/tenxgraph/tenxgraph/internal/proctest"

	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The environment is the base, the private folder, env, pass_env, extra:
// nothing else of the host's, and never a denied variable.
func TestEnviron(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("SNOOP_ME", "secret")
	t.Setenv("PASSED", "yes")
	s := Spec{Name: "p", Key: "plugins[0]", Profile: Profile{Env: map[string]string{"B": "2", "A": "1"}, PassEnv: []string{"PASSED", "UNSET_ONE"}},
		Extra: []string{"PLUGIN_X=1"}}
	env, err := s.Environ("/h")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/usr/bin:/bin", "HOME=/h", "TMPDIR=/h", "A=1", "B=2", "PASSED=yes", "PLUGIN_X=1"}
	for _, k := range []string{"LANG", "LC_ALL", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			want = slices.Insert(want, 1, k+"="+v)
		}
	}
	if !slices.Equal(env, want) {
		t.Errorf("got %q\nwant %q", env, want)
	}
	s.Deny = []string{"PASSED"}
	if _, err := s.Environ("/h"); err == nil || !strings.Contains(err.Error(), "plugins[0].pass_env: PASSED holds a secret") {
		t.Errorf("a denied variable: %v", err)
	}
}

// What the kernel or the host cannot give is an error naming the key,
// before anything runs.
func TestCommandRefusesWhatItCannotEnforce(t *testing.T) {
	for _, c := range []struct {
		p    Profile
		want string
	}{
		{Profile{Network: "bridge"}, `plugins[0].network: "bridge" is not a network mode`},
		{Profile{Limits: Limits{MemoryMB: 64}}, "plugins[0].limits: limits need the host's executable"},
		{Profile{Group: "g"}, "plugins[0].group: set user too"},
		{Profile{User: "no-such-account-here"}, "plugins[0].user"},
	} {
		p, err := Command(Spec{Name: "p", Key: "plugins[0]", Path: "true", Profile: c.p})
		if err == nil {
			p.Release()
			t.Errorf("%+v: accepted", c.p)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}

// A started process leads its own group; Release ends the group and
// removes the private folder.
func TestReleaseEndsTheGroup(t *testing.T) {
	p, err := Command(Spec{Name: "sh", Path: "sh", Args: []string{"-c", "sleep 1000 & sleep 1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	home := p.home
	if _, err := os.Stat(home); err != nil {
		t.Fatalf("no private folder: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(proctest.Group(p.PID())) < 2 { // sh (or the sleep it became) and the other sleep
		if time.Now().After(deadline) {
			t.Fatalf("the group holds %v, want two processes", proctest.Group(p.PID()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Kill()
	_ = p.Cmd.Wait()
	p.Release()
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("the private folder is still there: %v", err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(proctest.Group(p.PID())) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the group still has processes: %v", proctest.Group(p.PID()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
