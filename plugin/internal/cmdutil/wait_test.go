package cmdutil

import (
	"errors"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func TestValidateWait(t *testing.T) {
	cases := map[string]struct {
		wait    bool
		timeout time.Duration
		dryRun  string
		wantErr string
	}{
		"wait":                {wait: true, timeout: time.Minute},
		"no wait, dry run":    {timeout: time.Minute, dryRun: "client"},
		"wait with a dry run": {wait: true, timeout: time.Minute, dryRun: "server", wantErr: "--wait cannot follow a --dry-run: nothing changes"},
		"zero timeout":        {timeout: 0, wantErr: "--timeout must be positive, got 0s"},
		"negative timeout":    {wait: true, timeout: -time.Second, wantErr: "--timeout must be positive, got -1s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := ValidateWait(tc.wait, tc.timeout, tc.dryRun)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != ExitUsage || e.Msg != tc.wantErr || e.Hint == "" {
				t.Fatalf("got %v, want usage error %q with a hint", err, tc.wantErr)
			}
		})
	}
}

func TestAddWaitFlags(t *testing.T) {
	wait, timeout := true, 2*time.Minute
	cmd := &cobra.Command{Use: "x"}
	AddWaitFlags(cmd, &wait, "Wait.", &timeout, "")
	f := cmd.Flags()
	if w, tm := f.Lookup("wait"), f.Lookup("timeout"); w == nil || w.DefValue != "true" || tm == nil || tm.DefValue != "2m0s" || tm.Usage != defaultTimeoutUsage {
		t.Fatalf("flags: wait %+v, timeout %+v", w, tm)
	}
	if err := f.Parse([]string{"--wait=false", "--timeout", "5s"}); err != nil || wait || timeout != 5*time.Second {
		t.Errorf("parsed wait %v timeout %v (%v)", wait, timeout, err)
	}

	only := &cobra.Command{Use: "y"}
	AddWaitFlags(only, nil, "", &timeout, "How long to wait for the CRDs.")
	if only.Flags().Lookup("wait") != nil || only.Flags().Lookup("timeout").Usage != "How long to wait for the CRDs." {
		t.Errorf("a nil wait registers only --timeout, with its usage")
	}
}
