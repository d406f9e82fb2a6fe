package cmdutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wf.yaml")
	if err := os.WriteFile(path, []byte("from the file"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		path, wantData, wantSource, wantErr string
	}{
		"a file":  {path: path, wantData: "from the file", wantSource: path},
		"stdin":   {path: "-", wantData: "from stdin", wantSource: "stdin"},
		"missing": {path: "no-such.yaml", wantSource: "no-such.yaml", wantErr: "cannot read no-such.yaml: no such file or directory"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data, source, err := ReadFile(tc.path, strings.NewReader("from stdin"))
			if source != tc.wantSource {
				t.Errorf("source %q, want %q", source, tc.wantSource)
			}
			if tc.wantErr != "" {
				var e *Error
				if !errors.As(err, &e) || e.Code != ExitUsage || e.Msg != tc.wantErr || e.Hint != "Check the path given to -f." {
					t.Fatalf("error %v, want usage error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(data) != tc.wantData {
				t.Errorf("got %q, %v; want %q", data, err, tc.wantData)
			}
		})
	}
}
