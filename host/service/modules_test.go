package service_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/host/service/internal/echo"
	"github.com/tenxgraph/tenxgraph/host/service/internal/scratch"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// A model provider and a store kind are one package and one import line
// each (internal/echo and internal/scratch, linked by this file's
// imports): the schema lists them, a config using them validates, its
// mistakes are reported at their paths with the file's others in one
// pass, and the service makes the model and opens the store by them.
func TestANewModelProviderAndStoreKindAreOnePackageEach(t *testing.T) {
	s := config.Schema()
	if enum := s.Properties["model"].Properties["provider"].Enum; !slices.Contains(enum, any(echo.Name)) {
		t.Errorf("model.provider's enum %v does not list %q", enum, echo.Name)
	}
	if enum := s.Properties["checkpointer"].Properties["type"].Enum; !slices.Contains(enum, any(scratch.Name)) {
		t.Errorf("checkpointer.type's enum %v does not list %q", enum, scratch.Name)
	}

	_, err := config.Parse([]byte(`{"agent": "tenxgraph:react",
	  "model": {"provider": "echo", "model": "whisper", "max_tokens": 5},
	  "checkpointer": {"type": "scratch", "path": "x.db"},
	  "plugins": [{"name": "w", "command": ["w"], "sha256": "abc"}]}`), t.TempDir())
	var ps toolspec.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("bad echo and scratch blocks were accepted or not reported as problems: %v", err)
	}
	for _, want := range []string{
		`model.model: echo has the models "plain" and "loud", not "whisper"`,
		`model.max_tokens: only the anthropic provider takes max_tokens (the Messages API requires one); the echo provider leaves the output limit to the model`,
		`checkpointer.path: only used when type is "sqlite" (the scratch checkpointer has no file)`,
		`plugins[0].sha256: must be 64 hexadecimal characters`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	_, err = config.Parse([]byte(`{"agent": "tenxgraph:react", "model": {"provider": "echo"}, "checkpointer": {"type": "scratchy"}}`), t.TempDir())
	for _, want := range []string{
		`model.model: missing`,
		`checkpointer.type: must be one of "sqlite", "memory", "postgres", "scratch", got "scratchy"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}

	cfg, err := config.Parse([]byte(`{"agent": "tenxgraph:react",
	  "model": {"provider": "echo", "model": "loud"}, "checkpointer": {"type": "scratch"}}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(context.Background(), cfg, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Shutdown(context.Background()) })
	if _, ok := svc.Store.(*scratch.Store); !ok {
		t.Errorf("the service opened a %T, want a *scratch.Store", svc.Store)
	}
	res, err := svc.App.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "hello")}, thread.RunConfig{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if last := res.Messages[len(res.Messages)-1]; last.Role != message.RoleAssistant || last.Text() != "HELLO" {
		t.Errorf("the run ended with %s %q, want the loud echo's HELLO", last.Role, last.Text())
	}
}
