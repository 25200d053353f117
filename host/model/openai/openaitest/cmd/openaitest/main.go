// Command openaitest runs openaitest's server in a process of its own, so a
// measurement of the host includes the real OpenAI provider and its HTTP
// client, and the model's CPU is not the host's. It answers like the
// quickstart's scripted model for "what is 2+3*4 and what is on my
// clipboard?": a user message gets calls to calculator and read_clipboard
// in one step, tool results get the final text.
//
//	openaitest -addr 127.0.0.1:0 [-cpuprofile FILE]
//
// It prints "openaitest: listening on http://ADDR/v1" on stdout, serves
// GET /stats ({"requests", "connections", "problems"}) beside the API, and
// stops on SIGINT or SIGTERM.
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

	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "where to listen")
	profile := flag.String("cpuprofile", "", "write a CPU profile to this file until the server stops")
	flag.Parse()
	if err := run(*addr, *profile); err != nil {
		fmt.Fprintln(os.Stderr, "openaitest:", err)
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
	model := openaitest.New()
	var calls atomic.Int64
	model.Handle(func(req openaitest.Request) openaitest.Reply {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "tool" {
			return openaitest.Text("2+3*4 = 14. Your clipboard holds: hi")
		}
		id := fmt.Sprintf("call_%d_", calls.Add(1))
		return openaitest.Calls(
			openaitest.Call(id+"0", "calculator", `{"expression":"2+3*4"}`),
			openaitest.Call(id+"1", "read_clipboard", `{}`))
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
	fmt.Printf("openaitest: listening on http://%s/v1\n", l.Addr())
	if err := srv.Serve(l); err != http.ErrServerClosed {
		return err
	}
	return nil
}
