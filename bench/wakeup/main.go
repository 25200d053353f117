// Command wakeup measures what a hand-off between two processes costs on
// this machine: one byte sent back and forth over two pipes between this
// process and a child, each waiting in Go's poller for the other, as
// tenxgraph serve, its providers and a model server wait for each other's
// answers. The child works for -work (spinning) before it answers, as a
// provider or a model server does: long enough that the waiting process
// stops looking for work and its CPU goes idle. It prints the percentiles
// of the round trip less that work: the cost of two hand-offs.
//
// Where the two processes share a CPU (taskset -c 0) a hand-off is a
// context switch; across CPUs it also wakes the other CPU, which on a
// virtual machine whose idle vCPUs halt waits for the hypervisor.
// -idle-poll keeps idle CPUs polling meanwhile (root; see bench/internal/
// idlepoll), which separates the two.
//
//	go run ./bench/wakeup
//	taskset -c 0 go run ./bench/wakeup
//	sudo go run ./bench/wakeup -idle-poll
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/tenxgraph/tenxgraph/bench/internal/idlepoll"
)

// childEnv marks the child and carries -work: it answers on fd 4 each
// byte read on fd 3, that long after reading it.
const childEnv = "WAKEUP_CHILD_WORK"

func main() {
	if v := os.Getenv(childEnv); v != "" {
		work, err := time.ParseDuration(v)
		if err == nil {
			err = echo(os.NewFile(3, "in"), os.NewFile(4, "out"), work)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "wakeup child:", err)
			os.Exit(1)
		}
		return
	}
	n := flag.Int("n", 20000, "round trips to time")
	work := flag.Duration("work", 100*time.Microsecond, "how long the child works before each answer")
	poll := flag.Bool("idle-poll", false, "keep idle CPUs polling during the measurement (Linux, root)")
	flag.Parse()
	if err := run(*n, *work, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "wakeup:", err)
		os.Exit(1)
	}
}

func run(n int, work time.Duration, poll bool) error {
	if n < 1 {
		return fmt.Errorf("-n is %d; want 1 or more", n)
	}
	if work < 0 {
		return fmt.Errorf("-work is %s; want 0 or more", work)
	}
	if poll {
		release, err := idlepoll.Hold()
		if err != nil {
			return err
		}
		defer release()
	}
	toChild, childIn, err := pipe()
	if err != nil {
		return err
	}
	childOut, fromChild, err := pipe()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+work.String())
	cmd.ExtraFiles = []*os.File{childIn, childOut}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the child: %w", err)
	}
	childIn.Close()
	childOut.Close()

	times, err := pingPong(toChild, fromChild, n)
	toChild.Close() // the child's read ends, and so does the child
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("the child: %w", werr)
	}
	if err != nil {
		return err
	}
	slices.Sort(times)
	at := func(q float64) float64 {
		return float64(times[int(q*float64(len(times)-1))]-work) / float64(time.Microsecond)
	}
	fmt.Printf("two hand-offs between processes (a round trip less the child's %s of work), %d times: p50 %.1f µs, p90 %.1f µs, p99 %.1f µs\n",
		work, n, at(0.50), at(0.90), at(0.99))
	return nil
}

// pipe returns the write end (to) and the read end (from) of a new pipe.
func pipe() (w, r *os.File, err error) {
	r, w, err = os.Pipe()
	return w, r, err
}

// pingPong sends a byte and waits for its echo n times (after a warm-up),
// returning each round trip's time.
func pingPong(out io.Writer, in io.Reader, n int) ([]time.Duration, error) {
	const warmup = 1000
	b := []byte{'x'}
	times := make([]time.Duration, 0, n)
	for i := range warmup + n {
		start := time.Now()
		if _, err := out.Write(b); err != nil {
			return nil, fmt.Errorf("send: %w", err)
		}
		if _, err := io.ReadFull(in, b); err != nil {
			return nil, fmt.Errorf("receive: %w", err)
		}
		if i >= warmup {
			times = append(times, time.Since(start))
		}
	}
	return times, nil
}

// echo answers each byte after spinning for work, so the time is spent on
// the child's CPU and the parent waits as it would for a real answer.
func echo(in io.Reader, out io.Writer, work time.Duration) error {
	b := []byte{0}
	for {
		if _, err := io.ReadFull(in, b); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		for start := time.Now(); time.Since(start) < work; {
		}
		if _, err := out.Write(b); err != nil {
			return err
		}
	}
}
