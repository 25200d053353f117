// Package cli is the tenxgraph command line. It is a package, not just a
// main, so that a code-first program can register its own graph and then
// call Main: the same commands, the same config file, its own graph.
package cli

import (
	"github.com/tenxgraph/tenxgraph/internal/sandbox"

	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Version is the build's version, set with -ldflags "-X .../host/cli.Version=v1.2.3".
var Version = "dev"

// Exit codes, documented in docs/cli.md.
const (
	ExitOK = 0
	// ExitFailure: invalid config, or a run that failed.
	ExitFailure = 1
	// ExitUsage: unknown command, flag or missing argument.
	ExitUsage = 2
)

// Main runs the command line with os.Args and exits.
func Main() {
	// (Run as the sandbox's trampoline, the binary never gets here: the
	// sandbox package takes over as it initializes.)
	// The host's environment holds its secrets (API tokens, the model key,
	// the store's DSN): no process of its account may read it.
	sandbox.ProtectHost()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run runs the command line with args and returns the exit code; tests call
// it directly.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var ps toolspec.Problems
	var fe *failure
	switch {
	case errors.As(err, &ps):
		fmt.Fprintf(stderr, "%s: %d problem(s):\n", configPath(cmd), len(ps))
		for _, p := range ps {
			fmt.Fprintf(stderr, "  %s\n", p)
		}
		return ExitFailure
	case errors.As(err, &fe):
		fmt.Fprintf(stderr, "error: %v\n", fe.err)
		return ExitFailure
	default:
		// cobra's own errors: unknown command or flag, bad arguments.
		fmt.Fprintf(stderr, "error: %v\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
		return ExitUsage
	}
}

func configPath(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("config"); f != nil {
		return f.Value.String()
	}
	return "10xgraph.json"
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "tenxgraph",
		Short:         "Agent graphs whose tools are plugins",
		Long:          "tenxgraph runs an agent graph described by 10xgraph.json: a model, tool providers, and remote tools that run in the client.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().String("config", "10xgraph.json", "the config file")
	root.AddCommand(serveCmd(), validateCmd(), schemaCmd(), toolsCmd(), runCmd(), storeCmd(), versionCmd(), pluginCmd())
	return root
}

// pluginCmd serves one of the providers this binary holds. The host starts
// it; a person never needs to, which is why it is hidden.
func pluginCmd() *cobra.Command {
	return &cobra.Command{
		Use:       "plugin NAME",
		Short:     "Serve a builtin provider as a plugin (started by the host)",
		Hidden:    true,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"builtin", "remote"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return fail(service.ServePlugin(args[0]))
		},
	}
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "tenxgraph %s\n", Version)
			return nil
		},
	}
}
