package cmdutil

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"
)

func TestNameArg(t *testing.T) {
	root := &cobra.Command{Use: "kubectl-sched"}
	cmd := &cobra.Command{Use: "retry"}
	root.AddCommand(cmd)
	check := NameArg("workflow")
	if err := check(cmd, []string{"nightly"}); err != nil {
		t.Errorf("one name: %v", err)
	}
	for _, args := range [][]string{nil, {"a", "b"}} {
		err := check(cmd, args)
		var e *Error
		if !errors.As(err, &e) || e.Code != ExitUsage {
			t.Fatalf("%q: %v, want a usage error", args, err)
		}
		want := "kubectl-sched retry takes one workflow name, got " + string(rune('0'+len(args))) + " arguments"
		if e.Msg != want || e.Hint != "See 'kubectl-sched retry --help'." {
			t.Errorf("%q: %q (hint %q), want %q", args, e.Msg, e.Hint, want)
		}
	}
}
