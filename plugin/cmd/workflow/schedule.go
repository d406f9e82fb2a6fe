package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"

	"github.com/kubectl-sched/kubectl-sched/api/cronschedule"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/quota"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/templates"
)

const scheduleLong = `Put a Workflow on a schedule: a CronWorkflow NAME, which the operator runs as
a Workflow named NAME-<schedule time as unix seconds> at each time of --cron, as
a CronJob runs Jobs. The workflow is read as 'workflow run' reads it: from a
file (-f FILE, or -f - for stdin) or rendered from a template (--template T
--set k=v ...), with -p setting its params.

The schedule is five fields, minute hour day-of-month month day-of-week
("0 2 * * *" is every day at 02:00), or @hourly, @daily, @weekly, @monthly,
@yearly; it is read in --time-zone (an IANA name such as Europe/Berlin; UTC
when not given). Before anything is sent, the schedule, the time zone and the
workflow's step references are checked (exit 7 when one is wrong), and the
next run time is printed.

The CronWorkflow is applied with server-side apply: running the command again
with other flags or another workflow changes the schedule in place (runs
already started keep their spec). Each flag left out goes back to its default,
as in the file of a declarative 'kubectl apply'. 'workflow trigger NAME' starts
a run at once; 'kubectl sched get cwf' shows the last and next runs.`

const scheduleExamples = `  # Every night at 02:00 Berlin time, the workflow in a file
  kubectl sched workflow schedule nightly --cron "0 2 * * *" --time-zone Europe/Berlin -f pipeline.yaml

  # Every 15 minutes from a template, never two at once, with a param
  kubectl sched workflow schedule poll --cron "*/15 * * * *" --concurrency-policy Forbid \
    --template release-workflow --set repo=https://example.com/x.git -p env=prod

  # Print the CronWorkflow without sending it
  kubectl sched workflow schedule nightly --cron @daily -f pipeline.yaml --dry-run=client -o yaml

  # Pause it (apply again without --suspend to resume)
  kubectl sched workflow schedule nightly --cron "0 2 * * *" -f pipeline.yaml --suspend`

// cronKind is the CronWorkflow kind, for messages and completion.
var cronKind = kinds.CronWorkflow

// ScheduleOptions for `kubectl sched workflow schedule`.
type ScheduleOptions struct {
	// The workflow is read by run's code: -f, --template, -p.
	RunOptions

	Cron                    string
	TimeZone                string
	ConcurrencyPolicy       string
	StartingDeadlineSeconds int64
	SucceededKept           int32
	FailedKept              int32
	Suspend                 bool

	cmd *cobra.Command
	cw  *schedv1.CronWorkflow
}

func newScheduleCommand(c kube.ClientOptions) *cobra.Command {
	o := &ScheduleOptions{RunOptions: RunOptions{ClientOptions: c, Print: printing.NewFlags()}}
	cmd := &cobra.Command{
		Use:               "schedule NAME --cron SCHEDULE (-f FILE | --template T [--set k=v]... | --from wft/NAME) [-p NAME=VALUE]...",
		Short:             "Run a Workflow on a cron schedule (a CronWorkflow), from a file or a template",
		Long:              scheduleLong,
		Example:           scheduleExamples,
		Args:              cmdutil.NameArg("cronworkflow"),
		ValidArgsFunction: o.CompleteNames(cronKind, 1),
		RunE:              cmdutil.RunE(o),
	}
	o.cmd = cmd
	f := cmd.Flags()
	f.StringVar(&o.Cron, "cron", "", `When runs start: five fields, minute hour day-of-month month day-of-week, such as "0 2 * * *", or @hourly, @daily, @weekly, @monthly, @yearly (required).`)
	f.StringVar(&o.TimeZone, "time-zone", "", "The IANA time zone --cron is read in, such as Europe/Berlin (default UTC).")
	f.StringVar(&o.ConcurrencyPolicy, "concurrency-policy", "", "When a run is due while one runs: Allow (start beside it, the default), Forbid (skip it) or Replace (stop the running one).")
	f.Int64Var(&o.StartingDeadlineSeconds, "starting-deadline-seconds", 0, "How late a missed run may still start, in seconds (default: however late, only the latest missed).")
	f.Int32Var(&o.SucceededKept, "successful-runs-history-limit", 3, "Succeeded runs to keep; older ones are deleted.")
	f.Int32Var(&o.FailedKept, "failed-runs-history-limit", 1, "Runs that did not succeed to keep; older ones are deleted.")
	f.BoolVar(&o.Suspend, "suspend", false, "Start no new runs until applied again without it.")
	o.AddFlags(cmd, workflowKind.Kind, "The Workflow's YAML or JSON file; - reads stdin. Its spec is what each run runs.")
	o.addFromFlag(cmd)
	f.StringArrayVarP(&o.Params, "param", "p", nil, "Set a declared workflow param: -p NAME=VALUE (repeatable; wins over --param-file).")
	f.StringArrayVar(&o.ParamFiles, "param-file", nil, "YAML file mapping declared workflow params to values (repeatable; later files win).")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" prints the CronWorkflow without sending it; "server" has the API server check it without persisting it.`)
	f.StringVarP(o.Print.OutputFormat, "output", "o", "", "Output format: json, yaml, name, jsonpath=..., go-template=... (default: a line saying what was done, and the next run).")
	return cmd
}

// Complete reads the workflow and builds the CronWorkflow.
func (o *ScheduleOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	if err := o.validateSource("kubectl sched workflow schedule NAME --cron SCHEDULE"); err != nil {
		return err
	}
	if err := o.ClientOptions.Complete(cmd, args); err != nil {
		return err
	}
	if err := o.load(cmd.Context()); err != nil {
		return err
	}
	wf := o.wf
	o.cw = &schedv1.CronWorkflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: cronKind.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: wf.Namespace, Labels: wf.Labels},
		Spec: schedv1.CronWorkflowSpec{
			Schedule:          o.Cron,
			TimeZone:          o.TimeZone,
			ConcurrencyPolicy: schedv1.ConcurrencyPolicy(o.ConcurrencyPolicy),
			Suspend:           o.Suspend,
			WorkflowSpec:      wf.Spec,
		},
	}
	if t := wf.Annotations[templates.AnnotationTemplate]; t != "" {
		o.cw.Annotations = map[string]string{templates.AnnotationTemplate: t}
	}
	f := cmd.Flags()
	if f.Changed("starting-deadline-seconds") {
		o.cw.Spec.StartingDeadlineSeconds = ptr.To(o.StartingDeadlineSeconds)
	}
	if f.Changed("successful-runs-history-limit") {
		o.cw.Spec.SuccessfulRunsHistoryLimit = ptr.To(o.SucceededKept)
	}
	if f.Changed("failed-runs-history-limit") {
		o.cw.Spec.FailedRunsHistoryLimit = ptr.To(o.FailedKept)
	}
	return nil
}

// Validate checks the flags; the schedule itself is checked in Run, with
// the workflow, so that every problem is told at once.
func (o *ScheduleOptions) Validate() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	if p := o.ConcurrencyPolicy; p != "" && p != string(schedv1.ConcurrencyAllow) && p != string(schedv1.ConcurrencyForbid) && p != string(schedv1.ConcurrencyReplace) {
		return cmdutil.Usage("Use Allow, Forbid or Replace.", "--concurrency-policy %q is not a policy", p)
	}
	f := o.cmd.Flags()
	switch {
	case o.Cron == "":
		return cmdutil.Usage(`Give the schedule, such as --cron "0 2 * * *" (every day at 02:00) or --cron @hourly.`, "--cron is required")
	case f.Changed("starting-deadline-seconds") && (o.StartingDeadlineSeconds < 1 || o.StartingDeadlineSeconds > 2678400):
		return cmdutil.Usage("Use from 1 to 2678400 (31 days), or leave it out.", "--starting-deadline-seconds %d is out of range", o.StartingDeadlineSeconds)
	case o.SucceededKept < 0 || o.SucceededKept > 100 || o.FailedKept < 0 || o.FailedKept > 100:
		return cmdutil.Usage("Keep from 0 to 100 runs of each.", "--successful-runs-history-limit and --failed-runs-history-limit must be between 0 and 100")
	}
	return nil
}

// Run checks the schedule and the workflow, applies the CronWorkflow and
// says when it runs next.
func (o *ScheduleOptions) Run(ctx context.Context) error {
	cw := o.cw
	var probs []string
	if n := len(cw.Name); n > schedv1.MaxCronWorkflowNameLength {
		probs = append(probs, fmt.Sprintf("metadata.name: %q has %d characters, at most %d: runs are named NAME-<unix time> and NAME-manual-<unix time>, within 63; pick a shorter NAME",
			cw.Name, n, schedv1.MaxCronWorkflowNameLength))
	}
	sched, err := cronschedule.Parse(cw.Spec.Schedule, cw.Spec.TimeZone)
	if err != nil {
		probs = append(probs, flagged(err))
	}
	checked, err := o.effective(o.wf)
	if err != nil {
		return err
	}
	for _, p := range problems(checked) {
		switch {
		case strings.HasPrefix(p, "metadata.name"):
		case strings.HasPrefix(p, "spec."):
			probs = append(probs, "spec.workflowSpec."+strings.TrimPrefix(p, "spec."))
		default:
			probs = append(probs, p)
		}
	}
	if len(probs) > 0 {
		hint := "Fix it and run again; nothing was submitted."
		if len(probs) > 1 {
			hint = "Fix them and run again; nothing was submitted."
		}
		return cmdutil.Errorf(cmdutil.ExitInvalid, hint,
			"cronworkflow %s has %d problem%s:\n  %s", cw.Name, len(probs), plural(len(probs)), strings.Join(probs, "\n  "))
	}
	if o.secret != nil {
		// First, so the runs that read it find it.
		if err := o.Clients.Apply(ctx, o.secret, o.DryRun); err != nil {
			return cmdutil.API(err, "create", fmt.Sprintf("secrets %q", o.secret.Name))
		}
	}
	// Who last wrote what the runs do: their requester, which the
	// admission policy holds to the writer.
	if cw.Spec.WorkflowSpec.RequestedBy, err = requestedBy(ctx, o.Clients, &checked.Spec); err != nil {
		return err
	}
	if err := o.Clients.Apply(ctx, cw, o.DryRun); err != nil {
		if qe := quota.Refused(ctx, o.Clients.Client, cw.Namespace, err, time.Now()); qe != nil {
			return qe
		}
		return cmdutil.API(err, "patch", cronKind.What(cw.Namespace, cw.Name))
	}
	cw.SetGroupVersionKind(cronKind.GVK())
	if !o.Print.IsTable() {
		if o.DryRun == "client" {
			// Nothing went to the server: the spec that would be applied,
			// without the empty status the Go type carries.
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cw)
			if err != nil {
				return err
			}
			delete(u, "status")
			unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
			return o.Print.Print(&unstructured.Unstructured{Object: u}, o.Out)
		}
		return o.Print.Print(cw, o.Out)
	}
	fmt.Fprintf(o.Out, "%s/%s serverside-applied%s\n", cronKind.Qualified(), cw.Name, cmdutil.DryRunSuffix(o.DryRun))
	now := time.Now()
	switch next := sched.Next(now); {
	case cw.Spec.Suspend:
		fmt.Fprintln(o.Out, "Suspended: no run starts until it is applied again without --suspend.")
	case !next.IsZero():
		fmt.Fprintf(o.Out, "Next run: %s (in %s)\n", next.In(sched.Location()).Format("2006-01-02 15:04:05 MST"), duration.HumanDuration(next.Sub(now)))
	}
	if o.DryRun == "" {
		nsFlag := ""
		if o.Clients.ExplicitNamespace {
			nsFlag = " -n " + cw.Namespace
		}
		fmt.Fprintf(o.Out, "Run it now with: kubectl sched workflow trigger %s%s\n", cw.Name, nsFlag)
	}
	return nil
}

// flagged names the flag of a schedule or time zone problem besides its
// field.
func flagged(err error) string {
	var e *cronschedule.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	flag := map[string]string{cronschedule.FieldSchedule: "--cron", cronschedule.FieldTimeZone: "--time-zone"}[e.Field]
	return fmt.Sprintf("%s (%s): %s", e.Field, flag, e.Detail)
}
