// Package watchtest runs a kubectl sched command in the background, so a
// test can change objects (write statuses, as the operator would) while the
// command watches them, and read its output as it comes.
package watchtest

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

// Timeout bounds every wait in a test.
const Timeout = 30 * time.Second

// Running is a command running in the background.
type Running struct {
	out, errOut buffer
	done        chan int
	code        int
	finished    bool
	cancel      context.CancelFunc
}

// Start runs `kubectl sched ARGS --kubeconfig KUBECONFIG` in-process.
func Start(kubeconfig string, args ...string) *Running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{done: make(chan int, 1), cancel: cancel}
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &r.out, ErrOut: &r.errOut}
	root := cmd.NewRootCommand(streams)
	root.SetArgs(WithKubeconfig(kubeconfig, args...))
	root.SetContext(ctx)
	go func() { r.done <- cmd.Execute(root, streams) }()
	return r
}

// Stop interrupts the command, as Ctrl-C would a watch that never ends by
// itself, and returns its exit code.
func (r *Running) Stop(t testing.TB) int {
	t.Helper()
	r.cancel()
	return r.Wait(t)
}

// WithKubeconfig adds --kubeconfig to args before any "--", after which
// it would be a word of the task's command.
func WithKubeconfig(kubeconfig string, args ...string) []string {
	i := slices.Index(args, "--")
	if i < 0 {
		i = len(args)
	}
	return slices.Concat(args[:i], []string{"--kubeconfig", kubeconfig}, args[i:])
}

// Stdout is what the command printed so far.
func (r *Running) Stdout() string { return r.out.String() }

// Stderr is what the command printed on stderr so far.
func (r *Running) Stderr() string { return r.errOut.String() }

// Wait waits for the command to end and returns its exit code.
func (r *Running) Wait(t testing.TB) int {
	t.Helper()
	if r.finished {
		return r.code
	}
	select {
	case r.code = <-r.done:
		r.finished = true
		return r.code
	case <-time.After(Timeout):
		t.Fatalf("the command did not end within %s\nstdout:\n%s\nstderr:\n%s", Timeout, r.Stdout(), r.Stderr())
		return -1
	}
}

// Exited reports whether the command has ended.
func (r *Running) Exited() bool {
	if r.finished {
		return true
	}
	select {
	case r.code = <-r.done:
		r.finished = true
		return true
	default:
		return false
	}
}

// Change runs change and waits until the command printed more on stdout,
// so each change is seen on its own and the output is deterministic.
func (r *Running) Change(t testing.TB, what string, change func()) {
	t.Helper()
	before := len(r.Stdout())
	change()
	Eventually(t, what, func() bool {
		if len(r.Stdout()) > before {
			return true
		}
		if r.Exited() {
			t.Fatalf("the command ended (exit %d) before it showed %s\nstdout:\n%s\nstderr:\n%s", r.code, what, r.Stdout(), r.Stderr())
		}
		return false
	})
}

// Eventually waits until cond holds. Tests may poll; commands may not.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// buffer is a bytes.Buffer safe for a writer and a reader at once.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
