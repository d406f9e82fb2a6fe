package task

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/quota"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/taskfollow"
)

const runExamples = `  # Run a command in busybox and wait: exit 0 and its outputs as KEY=VALUE
  # lines on success, 10 on failure, 11 past --timeout
  kubectl sched task run hello --image busybox --wait -- sh -c 'echo hi'

  # Follow its logs to the end, give up watching after 10 minutes (exit 12)
  kubectl sched task run train --image trainer:1.2 --env EPOCHS=3 --timeout 1h \
    --retries 2 -f --watch-timeout 10m -- python train.py --fast

  # Retry twice, 30s after the first failure and 1m after the second, and
  # only when it exits 75 (EX_TEMPFAIL); any other code fails it at once
  kubectl sched task run fetch --image fetcher:2 --retries 2 --retry-backoff 30s \
    --retry-on-exit-codes 75 --wait

  # Pass every word to the image's own entrypoint, as kubectl run does
  kubectl sched task run lint --image linter --command=false -- --strict ./...

  # Work in a checkout another task left in the claim "src", and write
  # results into the claim "out"
  kubectl sched task run test --image golang:1.26 --workspace src:/src:ro \
    --workspace out:/out --wait -- sh -c 'cd /src && go test ./... > /out/report'

  # Clone a repository at tag v1.2 into the claim "src" before the task
  # starts; the commit it ended on is the output repo.app.commit
  kubectl sched task run build --image golang:1.26 --workspace src:/src \
    --repo https://git.example.com/team/app.git@v1.2:/src/app --repo-secret git-token \
    --wait -- sh -c 'cd /src/app && go build ./...'

  # Print the AgentTask instead of creating it
  kubectl sched task run hello --image busybox --dry-run=client -o yaml -- echo hi`

// RunOptions for `kubectl sched task run`.
type RunOptions struct {
	kube.ClientOptions
	Print *printing.Flags

	Name         string
	Image        string
	Env          []string
	Timeout      time.Duration
	Retries      int32
	RetryBackoff time.Duration
	RetryCodes   []int32
	TTL          time.Duration
	Labels       []string
	Annotations  []string
	NodePools    []string
	Workspaces   []string
	Repos        []string
	RepoSecret   string
	OutputsDir   string
	Command      bool
	Words        []string
	Follow       bool
	Wait         bool
	WatchTimeout time.Duration
	DryRun       string

	retriesSet bool
	task       *schedv1.AgentTask
}

func newRunCommand(c kube.ClientOptions) *cobra.Command {
	o := &RunOptions{ClientOptions: c, Print: printing.NewFlags()}
	cmd := &cobra.Command{
		Use:   "run NAME --image IMAGE [flags] [-- COMMAND [ARGS...]]",
		Short: "Create an AgentTask: one container run to completion, with outputs",
		Long: `Create an AgentTask that runs IMAGE once to completion in a Job, and
optionally wait for it (--wait) or follow its logs (-f).

Words after -- are the container's command: the first replaces the image's
entrypoint (spec.command) and the rest are its arguments (spec.args). With
--command=false every word is an argument to the image's own entrypoint,
which is what 'kubectl run' does without --command. With no words the image
runs as built.

A task reports outputs by writing KEY=VALUE lines to its termination message
(/dev/termination-log), or, with --outputs-dir DIR, as files in DIR (each
file one output, its name the key; up to 1 MiB in all). With --wait or -f the command ends when the task
does: exit 0 when it Succeeded, printing its outputs as KEY=VALUE lines on
stdout; 10 when it Failed (reason, exit code and message on stderr); 11 when
it ran past --timeout; 12 when --watch-timeout passed first (the task goes
on). Progress goes to stderr, so stdout holds only the logs and outputs.

With --retries N a failed attempt is tried again, up to N times; an attempt
stopped by a disruption (a node drain, a preemption) never counts.
--retry-backoff sets the wait before each retry (doubled each time) and
--retry-on-exit-codes the exit codes worth one (spec.retry). While it waits,
the progress says which attempt failed and when the next starts.

A task that already exists is not changed: pick another NAME, or delete it.`,
		Example: runExamples,
		Args:    cobra.MinimumNArgs(1),
		RunE:    cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Image, "image", "", "The container image to run (required).")
	f.StringArrayVarP(&o.Env, "env", "e", nil, "An environment variable NAME=VALUE; repeat for more.")
	f.DurationVar(&o.Timeout, "timeout", 0, "The longest the task may run, retries included; past it the task ends in phase Timeout (1s to 168h).")
	f.Int32Var(&o.Retries, "retries", 0, "Attempts after a failed one (0 to 10).")
	f.DurationVar(&o.RetryBackoff, "retry-backoff", 0, "With --retries, wait this long after the first failed attempt, doubled for each next (10s to 10m; at most 10m); the task is Running, BackingOff meanwhile. Without it, the Job controller waits 10s, doubled.")
	f.Int32SliceVar(&o.RetryCodes, "retry-on-exit-codes", nil, "With --retries, retry only an attempt that exits with one of these codes (1 to 255, comma-separated or repeated); any other fails the task at once.")
	f.DurationVar(&o.TTL, "ttl", 0, "Delete the task's Job and pod this long after it finished; its outputs stay in the AgentTask. In a tenant namespace the tier bounds it, and without it the tier's default deletes the whole task (see 'kubectl sched tenant describe').")
	f.StringArrayVarP(&o.Labels, "label", "l", nil, "A label key=value for the AgentTask; repeat for more.")
	f.StringArrayVar(&o.Annotations, "annotation", nil, "An annotation key=value passed through to the task's pod; repeat for more.")
	f.StringArrayVar(&o.NodePools, "node-pool", nil, "Run only on nodes of this pool (placement.nodePools), tolerating the pool's taint; repeat for more, in order of preference.")
	f.StringArrayVar(&o.Workspaces, "workspace", nil, "Mount an existing PersistentVolumeClaim of the namespace: CLAIM:/PATH, or CLAIM:/PATH:ro read-only; repeat for more (at most 4).")
	f.StringArrayVar(&o.Repos, "repo", nil, "A git repository to clone before the task starts: URL[@REF][:/PATH], https:// or http://; REF a branch, tag or commit (the default branch without it), PATH where it goes (/workspace/NAME without it, NAME the URL's last word). Under a --workspace path it is cloned into that claim. Repeat for more (at most 8); each commit becomes the output repo.NAME.commit.")
	f.StringVar(&o.RepoSecret, "repo-secret", "", "A Secret of the namespace with the keys username and password (a token) for every https:// --repo.")
	f.StringVar(&o.OutputsDir, "outputs-dir", "", "A directory whose files become the task's outputs (spec.outputs.fromDir): each file directly in it is one, its name the key; at most 64 files and 1 MiB in all, or less as the namespace's tier says.")
	f.BoolVar(&o.Command, "command", true, "Use the first word after -- as the command; with --command=false all words are arguments to the image's entrypoint.")
	f.BoolVarP(&o.Follow, "follow", "f", false, "Stream the logs of the task's pod once it runs, then exit like --wait.")
	f.BoolVar(&o.Wait, "wait", false, "Wait for the task to finish and exit with its outcome (0, 10 or 11); print its outputs.")
	f.DurationVar(&o.WatchTimeout, "watch-timeout", 0, "With --wait or -f, stop waiting after this long and exit 12 (0: no limit).")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" prints the AgentTask without sending it; "server" has the API server check it without persisting it.`)
	o.Print.AddFlags(cmd, false)
	return cmd
}

// Complete reads the arguments and builds the AgentTask.
func (o *RunOptions) Complete(cmd *cobra.Command, args []string) error {
	dash := cmd.ArgsLenAtDash()
	switch {
	case dash == -1 && len(args) > 1:
		return cmdutil.Usage("Put the command after --: kubectl sched task run NAME --image IMAGE -- COMMAND ARGS...",
			"unexpected arguments %q before --", args[1:])
	case dash == 0:
		return cmdutil.Usage("kubectl sched task run NAME --image IMAGE -- COMMAND ARGS...", "NAME is missing before --")
	case dash > 1:
		return cmdutil.Usage("Put the command after --: kubectl sched task run NAME --image IMAGE -- COMMAND ARGS...",
			"unexpected arguments %q before --", args[1:dash])
	}
	o.Name = args[0]
	if dash > 0 {
		o.Words = args[dash:]
	}
	o.retriesSet = cmd.Flags().Changed("retries")
	if err := o.retryFlags(cmd); err != nil {
		return err
	}
	var err error
	if err = o.ClientOptions.Complete(cmd, args); err != nil {
		return err
	}
	o.task, err = o.build(o.Clients.Namespace)
	return err
}

// Validate checks the flags that Complete does not read.
func (o *RunOptions) Validate() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	if o.Image == "" {
		return cmdutil.Usage("kubectl sched task run NAME --image IMAGE [-- COMMAND ARGS...]", "--image is required")
	}
	if o.DryRun != "" && (o.Wait || o.Follow) {
		return cmdutil.Usage("Drop --wait/-f, or drop --dry-run.", "--dry-run creates nothing to wait for")
	}
	if o.WatchTimeout < 0 || o.WatchTimeout > 0 && !o.Wait && !o.Follow {
		return cmdutil.Usage("Use --watch-timeout with --wait or -f, as a positive duration.", "--watch-timeout %s needs --wait or -f", o.WatchTimeout)
	}
	if o.Timeout < 0 || o.TTL < 0 || o.Retries < 0 || o.RetryBackoff < 0 {
		return cmdutil.Usage("Durations and --retries must not be negative.", "negative --timeout, --ttl, --retries or --retry-backoff")
	}
	return nil
}

// retryFlags checks that --retry-backoff and --retry-on-exit-codes come
// with --retries, which says how many retries they shape.
func (o *RunOptions) retryFlags(cmd *cobra.Command) error {
	for _, f := range []string{"retry-backoff", "retry-on-exit-codes"} {
		if cmd.Flags().Changed(f) && !o.retriesSet {
			return cmdutil.Usage("Add --retries N: how many times a failed attempt is tried again.", "--%s needs --retries", f)
		}
	}
	return nil
}

// build makes the AgentTask from the flags; a bad NAME, --env, --label or
// --annotation is a usage error.
func (o *RunOptions) build(ns string) (*schedv1.AgentTask, error) {
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		return nil, cmdutil.Usage("Use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit.",
			"invalid task name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	t := &schedv1.AgentTask{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: "AgentTask"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: ns},
		Spec:       schedv1.AgentTaskSpec{Image: o.Image},
	}
	if len(o.Words) > 0 {
		if o.Command {
			t.Spec.Command, t.Spec.Args = o.Words[:1], o.Words[1:]
		} else {
			t.Spec.Args = o.Words
		}
		if len(t.Spec.Args) == 0 {
			t.Spec.Args = nil
		}
	}
	seen := map[string]bool{}
	for _, e := range o.Env {
		name, value, ok := strings.Cut(e, "=")
		// Only the name is quoted back: the value may be a secret.
		if !ok || name == "" {
			return nil, cmdutil.Usage("Write --env NAME=VALUE, one variable per flag.", "--env %q: want NAME=VALUE", name)
		}
		if !envName(name) {
			return nil, cmdutil.Usage("A variable name holds letters, digits, '_', '-' and '.', and does not start with a digit.",
				"--env: invalid variable name %q", name)
		}
		if seen[name] {
			return nil, cmdutil.Usage("Give each variable once.", "--env: %s is given twice", name)
		}
		seen[name] = true
		t.Spec.Env = append(t.Spec.Env, schedv1.EnvVar{Name: name, Value: value})
	}
	labels, err := pairs("--label", o.Labels, func(k, v string) []string {
		return append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...)
	})
	if err != nil {
		return nil, err
	}
	t.Labels = labels
	annotations, err := pairs("--annotation", o.Annotations, func(k, _ string) []string { return validation.IsQualifiedName(k) })
	if err != nil {
		return nil, err
	}
	if annotations != nil {
		t.Spec.PodMetadata = &schedv1.PodMetadata{Annotations: annotations}
	}
	if o.Timeout > 0 {
		t.Spec.Timeout = &metav1.Duration{Duration: o.Timeout}
	}
	switch {
	case o.RetryBackoff > 0 || len(o.RetryCodes) > 0:
		// The API server checks the bounds (backoff 10s to 10m, codes 1 to 255).
		t.Spec.Retry = &schedv1.RetryPolicy{Limit: o.Retries, OnExitCodes: o.RetryCodes}
		if o.RetryBackoff > 0 {
			t.Spec.Retry.Backoff = &metav1.Duration{Duration: o.RetryBackoff}
		}
	case o.retriesSet:
		t.Spec.Retries = ptr.To(o.Retries)
	}
	if o.TTL > 0 {
		t.Spec.TTLAfterFinished = &metav1.Duration{Duration: o.TTL}
	}
	if len(o.NodePools) > 0 {
		t.Spec.Placement = &schedv1.Placement{NodePools: o.NodePools}
	}
	if o.OutputsDir != "" {
		if !strings.HasPrefix(o.OutputsDir, "/") || strings.Contains(o.OutputsDir, ":") {
			return nil, cmdutil.Usage("Write --outputs-dir /PATH, an absolute path in the container.", "--outputs-dir %q: want an absolute path without ':'", o.OutputsDir)
		}
		t.Spec.Outputs = &schedv1.TaskOutputs{FromDir: o.OutputsDir}
	}
	for i, w := range o.Workspaces {
		m, err := workspaceFlag(i, w)
		if err != nil {
			return nil, err
		}
		t.Spec.Workspaces = append(t.Spec.Workspaces, m)
	}
	if o.RepoSecret != "" && len(o.Repos) == 0 {
		return nil, cmdutil.Usage("Give the repositories with --repo URL.", "--repo-secret %q without --repo", o.RepoSecret)
	}
	for i, s := range o.Repos {
		r, err := repoFlag(i, s)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(t.Spec.Repos, func(o schedv1.Repo) bool { return o.Name == r.Name }) {
			r.Name = fmt.Sprintf("repo%d", i)
		}
		if o.RepoSecret != "" {
			if !strings.HasPrefix(r.URL, "https://") {
				return nil, cmdutil.Usage("Clone over https:// to send credentials.", "--repo %q: --repo-secret needs an https:// url; credentials are never sent in clear text", s)
			}
			r.SecretRef = &schedv1.RepoSecretRef{Name: o.RepoSecret}
		}
		t.Spec.Repos = append(t.Spec.Repos, r)
	}
	return t, nil
}

// repoFlag reads --repo URL[@REF][:/PATH] (flag i, from 0). PATH starts
// after the last ":/" (a port's ':' is followed by digits), REF after the
// last '@' of what is left past the host (a ref may hold '/'). The repository is named
// after the URL's last word, or repo<i> when that is no DNS label; the
// API server checks the rest (schemes, lengths, paths).
func repoFlag(i int, s string) (schedv1.Repo, error) {
	const hint = "Write --repo URL, URL@REF, URL:/PATH or URL@REF:/PATH, with URL an https:// or http:// git repository."
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || (scheme != "https" && scheme != "http") {
		return schedv1.Repo{}, cmdutil.Usage(hint, "--repo %q: the url must start with https:// or http://", s)
	}
	r := schedv1.Repo{}
	if at := strings.LastIndex(rest, ":/"); at >= 0 {
		rest, r.Path = rest[:at], rest[at+1:]
	}
	if slash := strings.Index(rest, "/"); slash >= 0 {
		if at := strings.LastIndex(rest[slash:], "@"); at >= 0 {
			rest, r.Ref = rest[:slash+at], rest[slash+at+1:]
			if r.Ref == "" {
				return schedv1.Repo{}, cmdutil.Usage(hint, "--repo %q: nothing after @: give a branch, tag or commit", s)
			}
		}
	}
	r.URL = scheme + "://" + rest
	base := strings.TrimSuffix(rest[strings.LastIndex(rest, "/")+1:], ".git")
	r.Name = strings.ToLower(base)
	if len(validation.IsDNS1123Label(r.Name)) > 0 || len(r.Name) > 40 || r.Name[0] < 'a' || r.Name[0] > 'z' {
		r.Name = fmt.Sprintf("repo%d", i)
	}
	return r, nil
}

// workspaceFlag reads --workspace CLAIM:/PATH[:ro] (flag i, from 0). The
// mount is named after the claim, or ws<i> when the claim's name is no
// DNS label of at most 40 characters; the API server checks the rest
// (at most 4 mounts, each at its own path).
func workspaceFlag(i int, s string) (schedv1.WorkspaceMount, error) {
	const hint = "Write --workspace CLAIM:/PATH, or CLAIM:/PATH:ro to mount it read-only, with CLAIM a PersistentVolumeClaim of the namespace."
	claim, path, ok := strings.Cut(s, ":")
	if !ok || claim == "" || !strings.HasPrefix(path, "/") {
		return schedv1.WorkspaceMount{}, cmdutil.Usage(hint, "--workspace %q: want CLAIM:/PATH", s)
	}
	if errs := validation.IsDNS1123Subdomain(claim); len(errs) > 0 {
		return schedv1.WorkspaceMount{}, cmdutil.Usage(hint, "--workspace %q: invalid claim name: %s", s, strings.Join(errs, "; "))
	}
	m := schedv1.WorkspaceMount{Name: claim, ClaimName: claim, MountPath: path}
	if p, ro := strings.CutSuffix(path, ":ro"); ro {
		m.MountPath, m.ReadOnly = p, true
	}
	if strings.Contains(m.MountPath, ":") {
		return schedv1.WorkspaceMount{}, cmdutil.Usage(hint, "--workspace %q: the path holds a ':'; only :ro may follow it", s)
	}
	if len(validation.IsDNS1123Label(claim)) > 0 || len(claim) > 40 {
		m.Name = fmt.Sprintf("ws%d", i)
	}
	return m, nil
}

// Run creates the task, prints it, and with --wait or -f follows it.
func (o *RunOptions) Run(ctx context.Context) error {
	t := o.task
	// Create, not apply: apply would quietly change a task that exists (and
	// may have run); like kubectl run, refuse instead.
	if err := o.Clients.Create(ctx, t, o.DryRun); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return cmdutil.Errorf(cmdutil.ExitError,
				fmt.Sprintf("Pick another name, or delete it first: kubectl sched delete agenttask %s -n %s", t.Name, t.Namespace),
				"agenttask %s already exists in namespace %s", t.Name, t.Namespace)
		}
		if qe := quota.Refused(ctx, o.Clients.Client, t.Namespace, err, time.Now()); qe != nil {
			return qe
		}
		return cmdutil.API(err, "create", what(t.Name))
	}
	if err := o.print(t); err != nil {
		return err
	}
	if !o.Wait && !o.Follow {
		return nil
	}
	return o.follow(ctx)
}

func (o *RunOptions) print(t *schedv1.AgentTask) error {
	if o.Print.OutputFormat != nil && *o.Print.OutputFormat != "" {
		return o.Print.Print(t, o.Out)
	}
	suffix := cmdutil.DryRunSuffix(o.DryRun)
	fmt.Fprintf(o.Out, "agenttask.%s/%s created%s\n", schedv1.GroupName, t.Name, suffix)
	return nil
}

// follow waits for the task to finish, streaming logs with -f, and turns
// its end into the exit code.
func (o *RunOptions) follow(ctx context.Context) error {
	ctx, cancel := watchtools.ContextWithOptionalTimeout(ctx, o.WatchTimeout)
	defer cancel()
	var last *schedv1.AgentTask
	lastSaid := ""
	if policy := taskfollow.RetryPolicy(o.task.Spec); policy != "" {
		fmt.Fprintf(o.ErrOut, "agenttask/%s: %s\n", o.task.Name, policy)
	}
	f := &taskfollow.Follower{
		Client: o.Clients.Client,
		Kube:   o.Clients.Kube,
		Logs:   o.Follow,
		Out:    o.Out,
		Note:   func(s string) { fmt.Fprintln(o.ErrOut, "warning: "+printing.Line(s)) },
		OnChange: func(t *schedv1.AgentTask) {
			last = t
			if t.Status.Phase.Finished() {
				return // the outcome says it
			}
			if say := taskfollow.Explain(t); say != lastSaid {
				lastSaid = say
				fmt.Fprintf(o.ErrOut, "agenttask/%s %s\n", t.Name, say)
			}
		},
	}
	final, err := f.Run(ctx, o.task.Namespace, o.task.Name)
	if err != nil {
		return watchError(err, o.task.Name, o.WatchTimeout, last)
	}
	// The progress ends with the task's own line, after its logs; a
	// failure's is the error the command exits with.
	if final.Status.Phase == schedv1.TaskSucceeded {
		fmt.Fprintf(o.ErrOut, "agenttask/%s %s\n", final.Name, taskfollow.Explain(final))
	}
	return outcome(final, func(s string) { fmt.Fprintln(o.Out, s) })
}

// envName is the CRD's pattern for variable names, [-._a-zA-Z][-._a-zA-Z0-9]*.
func envName(s string) bool {
	for i, c := range s {
		ok := c == '-' || c == '.' || c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9'
		if !ok {
			return false
		}
	}
	return s != ""
}

// pairs parses repeated key=value flags; check returns problems with one.
func pairs(flag string, values []string, check func(k, v string) []string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range values {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, cmdutil.Usage(fmt.Sprintf("Write %s key=value, one per flag.", flag), "%s %q: want key=value", flag, kv)
		}
		if errs := check(k, v); len(errs) > 0 {
			return nil, cmdutil.Usage(fmt.Sprintf("Write %s key=value with a valid key and value.", flag), "%s %q: %s", flag, kv, strings.Join(errs, "; "))
		}
		m[k] = v
	}
	return m, nil
}
