package cli

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/tenxgraph/tenxgraph/host/server"
	"github.com/tenxgraph/tenxgraph/host/service"
)

// shutdownGrace is how long a stopping server lets runs in flight finish
// before cutting them off: longer than a typical model call, short enough
// that a deploy does not hang.
const shutdownGrace = 30 * time.Second

func serveCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "serve [--addr HOST:PORT]",
		Short: "Serve the HTTP API and the AG-UI endpoint",
		Long: `serve validates the config, starts the tool providers, and serves the
HTTP API (docs/api.md) until interrupted. On SIGINT or SIGTERM it stops
accepting requests, lets runs in flight finish (up to 30s), then drains and
stops the providers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withService(cmd, nil, func(s *service.Service) error {
				srv, err := server.New(s, server.Options{})
				if err != nil {
					return fail(err)
				}
				if addr == "" {
					addr = s.Config.Server.Addr
				}
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					return fail(fmt.Errorf("listen on %s: %w (another server running? pass --addr)", addr, err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "tenxgraph %s: serving %q on http://%s (playground at /, API under /v1, health at /healthz)\n", Version, s.Config.Agent, ln.Addr())
				errc := make(chan error, 1)
				go func() { errc <- srv.Serve(ln) }()
				select {
				case err := <-errc:
					return fail(err)
				case <-cmd.Context().Done():
				}
				fmt.Fprintln(cmd.OutOrStdout(), "shutting down: letting runs in flight finish")
				ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), shutdownGrace)
				defer cancel()
				return fail(srv.Shutdown(ctx))
			})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (default: server.addr from the config, 127.0.0.1:8123)")
	return cmd
}
