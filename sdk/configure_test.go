package sdk_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/sdktest"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

type greeterOptions struct {
	Greeting string `json:"greeting,omitempty" jsonschema:"what to say before the name"`
	Times    int    `json:"times,omitempty" jsonschema:"how many times to say it"`
}

func greeter(t *testing.T) sdk.Provider {
	t.Helper()
	p, err := sdk.NewConfigured(func(_ context.Context, o greeterOptions) (sdk.Provider, error) {
		return sdk.MustTools("greeter", "1",
			sdk.MustTool("greet", "Greets.", func(_ context.Context, in struct {
				Name string `json:"name"`
			}) (string, error) {
				return strings.Repeat(o.Greeting+" "+in.Name+"; ", max(o.Times, 1)), nil
			})), nil
	}, sdk.WithProperty("greeting", `{"enum": ["hello", "hi"]}`), sdk.WithProperty("times", `{"minimum": 1, "maximum": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A provider built with NewConfigured declares its options schema across
// the plugin boundary, before Configure (with no tools yet) and after; the
// schema refuses what the options type and WithProperty refuse, with
// paths; and the options reach build decoded.
func TestNewConfiguredDeclaresItsOptionsSchema(t *testing.T) {
	ctx := context.Background()
	md, err := greeter(t).Metadata(ctx, sdk.MetadataRequest{})
	if err != nil || len(md.Tools) != 0 || len(md.OptionsSchema) == 0 {
		t.Fatalf("before Configure: %+v, %v; want no tools and a schema", md, err)
	}
	s, err := toolspec.Compile(md.OptionsSchema)
	if err != nil {
		t.Fatalf("the host would refuse the schema %s: %v", md.OptionsSchema, err)
	}
	got := toolspec.CheckValue(s, "plugins[0].options", json.RawMessage(`{"greeting":"yo","times":9,"tims":2}`)).Error()
	for _, want := range []string{
		"plugins[0].options.greeting: value must be one of",
		"plugins[0].options.times: must be <= 3",
		`plugins[0].options.tims: unknown key: did you mean "times"? (allowed: greeting, times)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if ps := toolspec.CheckValue(s, "options", json.RawMessage(`{}`)); len(ps) != 0 {
		t.Errorf("{} refused: every option is optional: %v", ps)
	}
	p := sdktest.ServeConfigured(t, greeterOptions{Greeting: "hi", Times: 2}, greeter(t))
	md, err = p.Metadata(ctx, sdk.MetadataRequest{})
	if err != nil || len(md.Tools) != 1 || string(md.OptionsSchema) != string(mustSchema(t)) {
		t.Fatalf("after Configure, across the boundary: %+v, %v; want the tool and the same schema", md, err)
	}
	if got := sdktest.Decode[string](t, sdktest.Call(t, p, "greet", map[string]string{"name": "Ada"})); got != "hi Ada; hi Ada; " {
		t.Errorf("greet = %q", got)
	}
	// Served without options, it is configured with {}, as the host does.
	if got := sdktest.Decode[string](t, sdktest.Call(t, sdktest.Serve(t, greeter(t)), "greet", map[string]string{"name": "Ada"})); got != " Ada; " {
		t.Errorf("greet with no options = %q", got)
	}
}

func mustSchema(t *testing.T) json.RawMessage {
	md, err := greeter(t).Metadata(context.Background(), sdk.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return md.OptionsSchema
}

// Options the schema would refuse never reach build: decoded strictly,
// an unknown key fails Configure naming it.
func TestNewConfiguredDecodesStrictly(t *testing.T) {
	p, err := sdk.NewConfigured(func(context.Context, greeterOptions) (sdk.Provider, error) { return sdk.MustTools("g", "1"), nil })
	if err != nil {
		t.Fatal(err)
	}
	err = p.(sdk.Configurer).Configure(context.Background(), sdk.ConfigureRequest{Options: json.RawMessage(`{"greting":"hi"}`)})
	if err == nil || !strings.Contains(err.Error(), "greting") {
		t.Fatalf("Configure with an unknown key: %v", err)
	}
}

// An options type that is not a struct is refused when the provider is
// built, not when the host starts it.
func TestNewConfiguredRefusesANonObjectOptionsType(t *testing.T) {
	_, err := sdk.NewConfigured(func(context.Context, []string) (sdk.Provider, error) { return nil, nil })
	if err == nil || !strings.Contains(err.Error(), "options") {
		t.Fatalf("NewConfigured with []string options: %v", err)
	}
}

// RequiresApproval marks a tool: given to NewConfigured it is a mistake,
// said at once rather than ignored.
func TestNewConfiguredRefusesAToolOnlyOption(t *testing.T) {
	_, err := sdk.NewConfigured(func(context.Context, greeterOptions) (sdk.Provider, error) { return nil, nil }, sdk.RequiresApproval())
	if err == nil || !strings.Contains(err.Error(), "RequiresApproval") {
		t.Fatalf("NewConfigured with RequiresApproval: %v", err)
	}
}
