package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/service"
)

func storeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Maintain the checkpointer's store",
		Args:  cobra.NoArgs,
	}
	var idle time.Duration
	compact := &cobra.Command{
		Use:   "compact [--delete-idle DURATION]",
		Short: "Give the space of deleted threads and checkpoints back to the file system",
		Long: `compact opens the store of --config and returns its free space to the file
system. On SQLite it converts a file created by an earlier release to
incremental auto-vacuum with one VACUUM (which rewrites the file: it needs
as much free disk as the file and blocks writers while it runs), and
otherwise frees the pages deletes left behind, in place. On PostgreSQL,
autovacuum reclaims deleted rows by itself and there is nothing to do.

--delete-idle first deletes the threads nobody has written for that long
(as checkpointer.idle_ttl does in a running server), and with them the
images and files only they held.

It ends by saying what the store keeps of media: how many blobs (each
content once, however many threads hold it), their size, and how many
(thread, blob) links hold them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, _ := cmd.Flags().GetString("config")
			cfg, err := config.Load(path)
			if err != nil {
				return fail(err)
			}
			ctx := cmd.Context()
			store, err := service.OpenStore(ctx, cfg.Checkpointer)
			if err != nil {
				return fail(err)
			}
			defer store.Close()
			out := cmd.OutOrStdout()
			if idle > 0 {
				n, err := service.DeleteIdle(ctx, store, time.Now().Add(-idle))
				if err != nil {
					return fail(fmt.Errorf("deleting idle threads: %w", err))
				}
				fmt.Fprintf(out, "deleted %d thread(s) idle for more than %s\n", n, idle)
			}
			if c, ok := store.(checkpoint.Compacter); !ok {
				fmt.Fprintf(out, "the %s checkpointer reclaims space by itself: nothing to compact\n", cfg.Checkpointer.Type)
			} else {
				freed, err := c.Compact(context.WithoutCancel(ctx))
				if err != nil {
					return fail(err)
				}
				fmt.Fprintf(out, "compacted %s: %s returned to the file system\n", cfg.Checkpointer.Path, byteSize(freed))
			}
			u, err := store.BlobUsage(ctx)
			if err != nil {
				return fail(err)
			}
			fmt.Fprintf(out, "media: %d blob(s), %s, held by %d thread link(s)\n", u.Blobs, byteSize(u.Bytes), u.Links)
			return nil
		},
	}
	compact.Flags().DurationVar(&idle, "delete-idle", 0, "first delete the threads not written for this long (such as 720h)")
	cmd.AddCommand(compact)
	return cmd
}

// byteSize prints n bytes for a person.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
