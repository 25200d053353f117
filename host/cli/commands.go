package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenxgraph/tenxgraph/host/toolnode"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"

	"github.com/spf13/cobra"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/remotetool"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
)

// withService starts the service of --config (on store, when set), runs f
// and shuts the service down, plugins included.
func withService(cmd *cobra.Command, store checkpoint.Checkpointer, f func(*service.Service) error) error {
	path, _ := cmd.Flags().GetString("config")
	s, err := service.Load(cmd.Context(), path, service.Options{Store: store})
	if err != nil {
		return fail(err)
	}
	defer s.Shutdown(context.WithoutCancel(cmd.Context()))
	return f(s)
}

func validateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the config: exit 0 when valid, otherwise list every problem with its path",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, _ := cmd.Flags().GetString("config")
			// Every problem in one pass: a file with problems of its own
			// is still checked against its graph.
			s, err := service.Validate(cmd.Context(), path, service.Options{Store: checkpoint.NewMemory()})
			if err != nil {
				return fail(err)
			}
			defer s.Shutdown(context.WithoutCancel(cmd.Context()))
			fmt.Fprintf(cmd.OutOrStdout(), "%s is valid: agent %q, %d tool(s) on %d node(s)\n", path, s.Config.Agent, len(s.Tools()), len(remotetool.ToolNodes(s.Graph)))
			// Where this host's kernel leaves a provider weakly isolated.
			for _, w := range service.IsolationWarnings(s.Profiles()) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
			}
			return nil
		},
	}
}

// schemaCmd prints the JSON Schema of the config, for editors and for
// tools that check a config without running the host.
func schemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema (draft 2020-12) of 10xgraph.json, for editors",
		Long: `schema prints the JSON Schema of 10xgraph.json, with every key's
description and default. Save it beside the config and point your editor at
it: a "$schema" key in the file, or VS Code's "json.schemas" setting.

  tenxgraph schema > 10xgraph.schema.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := json.MarshalIndent(config.Schema(), "", "  ")
			if err != nil {
				return fail(fmt.Errorf("encode the schema: %w", err))
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", out)
			return err
		},
	}
}

func toolsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tools",
		Short: "List each node's tools with their provider, kind and whether a person approves each call",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withService(cmd, checkpoint.NewMemory(), func(s *service.Service) error {
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NODE\tTOOL\tPROVIDER\tKIND\tAPPROVAL\tDESCRIPTION")
				for _, t := range s.Tools() {
					approval := "-"
					if t.NeedsApproval {
						approval = "required"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Node, t.Name, t.Provider, t.Kind, approval, summary(t.Description))
				}
				if err := w.Flush(); err != nil {
					return err
				}
				// Each process's sandbox profile, with provider_defaults
				// applied, then what the kernel gave it.
				profiles := s.Profiles()
				fmt.Fprintln(w, "\nPROCESS\tSANDBOX")
				for _, p := range profiles {
					fmt.Fprintf(w, "%s\t%s\n", p.Provider, p.Profile)
				}
				if err := w.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "\nThis host: %s\n", sandbox.Host())
				fmt.Fprintln(w, "PROCESS\tISOLATION")
				for _, p := range profiles {
					if p.Isolation != "" {
						fmt.Fprintf(w, "%s\t%s\n", p.Provider, p.Isolation)
					}
				}
				if err := w.Flush(); err != nil {
					return err
				}
				for _, warn := range service.IsolationWarnings(profiles) {
					fmt.Fprintf(cmd.OutOrStdout(), "warning: %s\n", warn)
				}
				return nil
			})
		},
	}
}

// summary is the description's first sentence, short enough for a table.
func summary(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if r := []rune(s); len(r) > 72 {
		s = string(r[:71]) + "…"
	}
	return s
}

func runCmd() *cobra.Command {
	var threadID string
	cmd := &cobra.Command{
		Use:   "run [--thread ID] MESSAGE",
		Short: "Hold one conversation in the terminal, answering remote tools at the prompt",
		Long: `run sends MESSAGE to the graph and prints the answer as it streams.
When the model calls a remote tool, run asks you for the result: type JSON
(an object, a number, a quoted string) or plain text, or start the line
with "!" to answer with an error. The graph resumes with your answer.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withService(cmd, nil, func(s *service.Service) error {
				if threadID == "" {
					threadID = newThreadID()
				}
				t := &terminal{out: cmd.OutOrStdout(), in: bufio.NewReader(cmd.InOrStdin()), app: s.App, threadID: threadID}
				return fail(t.converse(cmd.Context(), message.Text(message.RoleUser, args[0])))
			})
		},
	}
	cmd.Flags().StringVar(&threadID, "thread", "", "thread id (default: a new thread); reuse one to continue a conversation")
	return cmd
}

// terminal is one conversation at a prompt.
type terminal struct {
	out      io.Writer
	in       *bufio.Reader
	app      *thread.App
	threadID string
}

func (t *terminal) converse(ctx context.Context, first message.Message) error {
	// A thread left paused (a run stopped at the prompt) is answered first.
	if th, err := t.app.Thread(ctx, t.threadID); err == nil && len(th.RemoteToolCalls)+len(th.ApprovalRequests) > 0 {
		fmt.Fprintf(t.out, "Thread %s is waiting for %d remote tool result(s) and %d approval(s).\n", t.threadID, len(th.RemoteToolCalls), len(th.ApprovalRequests))
		if err := t.answer(ctx, th); err != nil {
			return err
		}
	}
	res, err := t.stream(ctx, []message.Message{first})
	if err != nil {
		return err
	}
	return t.answer(ctx, res)
}

// answer asks for the results of res's pending calls and resumes, until the
// thread completes.
func (t *terminal) answer(ctx context.Context, res graph.Result) error {
	for {
		if res.Status != graph.StatusInterrupted {
			fmt.Fprintf(t.out, "\n[thread %s]\n", t.threadID)
			return nil
		}
		answers := message.Message{Role: message.RoleTool}
		for _, c := range res.ApprovalRequests {
			a, err := t.approve(c)
			if err != nil {
				return err
			}
			answers.Content = append(answers.Content, a)
		}
		for _, c := range res.RemoteToolCalls {
			r, err := t.ask(c)
			if err != nil {
				return err
			}
			answers.Content = append(answers.Content, r)
		}
		var err error
		res, err = t.stream(ctx, []message.Message{answers})
		if errors.Is(err, graph.ErrExpired) {
			// Too late for some: the thread goes on without them, as a
			// server's wake-up would have done.
			fmt.Fprintf(t.out, "Too late: %v.\n", err)
			res, err = t.expire(ctx)
		}
		if err != nil {
			return err
		}
	}
}

// expire answers the thread's expired calls with their error results, runs
// it on, and prints what the model said.
func (t *terminal) expire(ctx context.Context) (graph.Result, error) {
	res, _, err := t.app.Expire(ctx, "", t.threadID, time.Now())
	if err != nil {
		return res, err
	}
	for _, m := range res.Messages[res.Prior:] {
		if m.Role == message.RoleAssistant {
			if text := m.Text(); text != "" {
				fmt.Fprintln(t.out, text)
			}
		}
	}
	return res, nil
}

func newThreadID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on supported platforms
	return "cli-" + hex.EncodeToString(b[:])
}

// stream runs once, printing model text as it arrives and a line per tool.
func (t *terminal) stream(ctx context.Context, input []message.Message) (graph.Result, error) {
	midLine := false
	for ev, err := range t.app.Stream(ctx, input, thread.RunConfig{ThreadID: t.threadID}) {
		if err != nil {
			if midLine {
				fmt.Fprintln(t.out)
			}
			return graph.Result{}, err
		}
		switch d := ev.Data.(type) {
		case graph.TextDelta:
			fmt.Fprint(t.out, d.Text)
			midLine = true
		case toolnode.ToolEvent:
			if midLine {
				fmt.Fprintln(t.out)
				midLine = false
			}
			if ev.Type == toolnode.EventToolStarted {
				fmt.Fprintf(t.out, "… running %s (%s)\n", d.Name, d.Provider)
			} else {
				status := "done"
				if d.IsError {
					status = "failed"
				}
				fmt.Fprintf(t.out, "✓ %s %s in %s\n", d.Name, status, d.Duration.Round(1000))
			}
		case toolnode.ToolIgnored:
			fmt.Fprintf(t.out, "(ignored client tool %s: %s)\n", d.Name, d.Reason)
		case graph.Result:
			if midLine {
				fmt.Fprintln(t.out)
			}
			return d, nil
		}
	}
	return graph.Result{}, errors.New("the run ended without a result")
}

// approve asks the person at the prompt whether a call may run: y runs it,
// n denies it (anything after the n is the reason the model reads).
func (t *terminal) approve(c message.ApprovalRequestBlock) (message.ApprovalBlock, error) {
	fmt.Fprintf(t.out, "\nThe model wants to run %s with %s.\n", c.Name, c.Arguments)
	for {
		fmt.Fprintf(t.out, "Allow %s? [y/n, optionally followed by a reason]> ", c.Name)
		line, err := t.in.ReadString('\n')
		if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
			return message.ApprovalBlock{}, fmt.Errorf("reading the approval for %s (call %s): %w; the thread %s stays paused, run again with --thread to answer", c.Name, c.ID, err, t.threadID)
		}
		line = strings.TrimSpace(line)
		answer, reason, _ := strings.Cut(line, " ")
		switch strings.ToLower(answer) {
		case "y", "yes":
			return message.ApprovalBlock{ToolCallID: c.ID, Approved: true, Reason: strings.TrimSpace(reason)}, nil
		case "n", "no":
			return message.ApprovalBlock{ToolCallID: c.ID, Approved: false, Reason: strings.TrimSpace(reason)}, nil
		}
		if err != nil {
			return message.ApprovalBlock{}, fmt.Errorf("no answer for the approval of %s (call %s); the thread %s stays paused, run again with --thread to answer", c.Name, c.ID, t.threadID)
		}
		fmt.Fprintln(t.out, "Please answer y or n.")
	}
}

// ask prompts for one remote tool's result.
func (t *terminal) ask(c message.RemoteToolCallBlock) (message.ToolResultBlock, error) {
	fmt.Fprintf(t.out, "\nThe model called the remote tool %s with %s.\n", c.Name, c.Arguments)
	if !c.ExpiresAt.IsZero() {
		fmt.Fprintf(t.out, "Answer by %s, when the call expires.\n", c.ExpiresAt.Local().Format(time.TimeOnly))
	}
	fmt.Fprintf(t.out, "Result for %s (JSON or text; start with ! for an error)> ", c.Name)
	line, err := t.in.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		return message.ToolResultBlock{}, fmt.Errorf("reading the result for %s (call %s): %w; the thread %s stays paused, run again with --thread to answer", c.Name, c.ID, err, t.threadID)
	}
	line = strings.TrimRight(line, "\r\n")
	r := message.ToolResultBlock{ToolCallID: c.ID}
	if rest, ok := strings.CutPrefix(line, "!"); ok {
		r.IsError = true
		line = rest
	}
	if json.Valid([]byte(line)) && strings.TrimSpace(line) != "" {
		r.Content = json.RawMessage(strings.TrimSpace(line))
	} else {
		raw, _ := json.Marshal(line) // a string always encodes
		r.Content = raw
	}
	return r, nil
}

// failure marks an error that is not a usage mistake.
type failure struct{ err error }

func (f *failure) Error() string { return f.err.Error() }

func fail(err error) error {
	var ps toolspec.Problems
	if err == nil || errors.As(err, &ps) {
		return err
	}
	return &failure{err}
}
