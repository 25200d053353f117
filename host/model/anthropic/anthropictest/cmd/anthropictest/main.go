// Command anthropictest runs anthropictest's server in a process of its
// own, so a measurement of the host includes the real anthropic provider
// and its HTTP client, and the model's CPU is not the host's. It answers
// like the quickstart's scripted model for "what is 2+3*4 and what is on my
// clipboard?": a user turn gets calls to calculator and read_clipboard in
// one turn, tool results get the final text.
//
//	anthropictest -addr 127.0.0.1:0 [-cpuprofile FILE]
//
// It prints "anthropictest: listening on http://ADDR" (the base URL) on
// stdout, serves GET /stats ({"requests", "connections", "problems"})
// beside the API, and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync/atomic"
	"syscall"

	"github.com/tenxgraph/tenxgraph/host/model/anthropic/anthropictest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "where to listen")
	profile := flag.String("cpuprofile", "", "write a CPU profile to this file until the server stops")
	flag.Parse()
	if err := run(*addr, *profile); err != nil {
		fmt.Fprintln(os.Stderr, "anthropictest:", err)
		os.Exit(1)
	}
}

func run(addr, profile string) error {
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	model := anthropictest.New()
	var calls atomic.Int64
	model.Handle(func(req anthropictest.Request) anthropictest.Reply {
		if n := len(req.Messages); n > 0 {
			if c := req.Messages[n-1].Content; len(c) > 0 && c[0].Type == "tool_result" {
				return anthropictest.Text("2+3*4 = 14. Your clipboard holds: hi")
			}
		}
		id := fmt.Sprintf("toolu_%d_", calls.Add(1))
		return anthropictest.ToolUses(
			anthropictest.Use(id+"0", "calculator", `{"expression":"2+3*4"}`),
			anthropictest.Use(id+"1", "read_clipboard", `{}`))
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"requests": model.Served(), "connections": model.Connections(), "problems": model.Problems()})
	})
	mux.Handle("/", model)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ConnState: model.ConnState}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Printf("anthropictest: listening on http://%s\n", l.Addr())
	if err := srv.Serve(l); err != http.ErrServerClosed {
		return err
	}
	return nil
}
