package workflow

import (
	"context"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// watchFlags are --watch, --logs and --watch-timeout of the commands that
// create a workflow and may then follow it (run, trigger).
type watchFlags struct {
	Watch        bool
	Logs         bool
	WatchTimeout time.Duration
}

// addFlags registers the flags; watchUsage says what --watch follows.
func (w *watchFlags) addFlags(f *pflag.FlagSet, watchUsage string) {
	f.BoolVarP(&w.Watch, "watch", "w", false, watchUsage)
	f.BoolVar(&w.Logs, "logs", false, "With --watch, stream the running step's pod logs.")
	f.DurationVar(&w.WatchTimeout, "watch-timeout", 0, "With --watch, stop watching after this long and exit 12 (0: no limit).")
}

// validate checks the flags against each other and --dry-run.
func (w *watchFlags) validate(dryRun string) error {
	switch {
	case dryRun != "" && w.Watch:
		return cmdutil.Usage("Drop --watch, or drop --dry-run.", "--dry-run creates nothing to watch")
	case (w.Logs || w.WatchTimeout != 0) && !w.Watch:
		return cmdutil.Usage("Add --watch.", "--logs and --watch-timeout need --watch")
	case w.WatchTimeout < 0:
		return cmdutil.Usage("Use a positive --watch-timeout, or 0 for no limit.", "--watch-timeout must not be negative")
	}
	return nil
}

// follow watches workflow ns/name until it ends, as the flags ask.
func (w *watchFlags) follow(ctx context.Context, c *kube.Clients, out io.Writer, ns, name string) error {
	tty := printing.Color(out)
	return follow(ctx, c, ns, name, followOptions{
		out: out, tty: tty, width: width(out, tty), logs: w.Logs, timeout: w.WatchTimeout,
	})
}
