// Package doctor implements `kubectl sched doctor`: one command that checks
// what kubectl-sched needs in the cluster and says, for each problem, what
// to do about it.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/buildinfo"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// Status is a check's verdict.
type Status string

// The verdicts.
const (
	OK   Status = "OK"
	Warn Status = "WARN"
	Fail Status = "FAIL"
	// Skip means the user may not read what the check looks at, or it depends
	// on something missing.
	Skip Status = "SKIP"
)

// Check is one line of the report.
type Check struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	// Fix says what to do when the status is not OK.
	Fix string `json:"fix,omitempty"`
	// Details are the lines under the check: settings, pools, commands.
	Details []string `json:"details,omitempty"`
}

// Report is what `doctor -o json|yaml` prints; its fields are stable.
type Report struct {
	PluginVersion     string  `json:"pluginVersion"`
	User              string  `json:"user,omitempty"`
	Namespace         string  `json:"namespace"`
	OperatorNamespace string  `json:"operatorNamespace"`
	Checks            []Check `json:"checks"`
	// Commands are the plugin's commands the user's RBAC allows in
	// Namespace, from SelfSubjectAccessReviews.
	Commands []CommandAccess `json:"commands,omitempty"`
}

// Options for `kubectl sched doctor`.
type Options struct {
	kube.ClientOptions
	Output string
	// OperatorNamespace is where to look for the operator's Leases and
	// settings; its Deployment's namespace when empty.
	OperatorNamespace string

	// Now is the clock for the leader Lease's age.
	Now func() time.Time
}

// NewCommand returns `kubectl sched doctor`.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	o := &Options{ClientOptions: c, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check what kubectl-sched needs in the cluster, and say how to fix what is wrong",
		Long: `Check, one line each, what kubectl-sched needs in the cluster: the CRDs and their
version, the operator Deployment and its leader Lease, the admission policies
and their bindings, the service-accounts webhook and its certificate's expiry
(a warning 90 days before), the optional APIs the operator found, the operator's
settings, the nodes of each node pool and their sched_ext support, and which
plugin commands your RBAC allows in the namespace (-n). Each line is OK, WARN,
FAIL or SKIP; a problem's line says how to fix it. A check of objects you may
not read is skipped ("forbidden: ..."), not an error.

Exit codes: 0 when nothing FAILs (WARN and SKIP included), 1 when a check
FAILs, 3 when the cluster cannot be reached, 4 when the CRDs are not
installed ('kubectl sched install' fixes it).`,
		Example: `  kubectl sched doctor
  kubectl sched doctor -n team-a
  kubectl sched doctor -o json`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml.")
	cmd.Flags().StringVar(&o.OperatorNamespace, "operator-namespace", "", "Namespace of the operator's Leases and settings (default: its Deployment's, else "+schedv1.DefaultOperatorNamespace+").")
	return cmd
}

// Complete builds the clients.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	// A check must not hang on a cluster that stopped answering; an
	// explicit --request-timeout wins.
	if t := o.Flags.Timeout; t == nil || *t == "" || *t == "0" {
		o.Flags.Timeout = ptr.To("10s")
	}
	return o.ClientOptions.Complete(cmd, args)
}

// Validate checks the flags.
func (o *Options) Validate() error {
	return cmdutil.ValidateJSONOrYAML(o.Output)
}

// Run runs the checks, prints them and exits by the worst of them.
func (o *Options) Run(ctx context.Context) error {
	// Everyone may read the version: failing here means no cluster.
	if _, err := o.Clients.Kube.Discovery().ServerVersion(); err != nil {
		return cmdutil.API(err, "get", "the server version")
	}
	rep := o.report(ctx)
	if err := o.print(rep); err != nil {
		return err
	}
	return exitError(rep)
}

func (o *Options) report(ctx context.Context) Report {
	d := &doctor{c: o.Clients, now: o.Now(), plugin: buildinfo.ClientVersion()}
	rep := Report{PluginVersion: d.plugin, Namespace: o.Clients.Namespace, User: d.whoami(ctx)}

	crds := d.crds(ctx)
	dep, depCheck := d.operatorDeployment(ctx)
	ns := o.OperatorNamespace
	switch {
	case ns != "":
	case dep != nil:
		ns = dep.Namespace
	default:
		ns = schedv1.DefaultOperatorNamespace
	}
	rep.OperatorNamespace = ns
	lease, leader := d.leader(ctx, ns)
	if depCheck == nil {
		c := operatorStatus(dep, d.plugin, leaseHeld(lease, d.now))
		depCheck = &c
	}
	access, rbac := d.rbac(ctx, rep.Namespace)
	rep.Commands = access
	rep.Checks = []Check{crds, *depCheck, leader, d.policies(ctx, ns), d.webhook(ctx, ns), d.optionalAPIs(ctx, ns), d.settings(ctx, ns), d.nodes(ctx), rbac}
	return rep
}

// whoami is the user's name as the API server knows it, "" when it
// cannot say (SelfSubjectReview is served since 1.28).
func (d *doctor) whoami(ctx context.Context) string {
	r, err := d.c.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return ""
	}
	return r.Status.UserInfo.Username
}

// exitError is the error the report exits with: the CRDs' absence first,
// as the other commands report it, then any FAIL.
func exitError(rep Report) error {
	var failed []string
	for _, c := range rep.Checks {
		if c.Name == checkCRDs && c.Status == Fail && strings.HasPrefix(c.Message, notServed) {
			return cmdutil.Errorf(cmdutil.ExitNotInstalled, "Run 'kubectl sched install' (needs cluster-admin), then 'kubectl sched doctor' again.",
				"the kubectl-sched CRDs are not installed in this cluster")
		}
		if c.Status == Fail {
			failed = append(failed, c.Name)
		}
	}
	if len(failed) > 0 {
		return cmdutil.Errorf(cmdutil.ExitError, "Each FAIL line above says how to fix it.", "%d check(s) failed: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

func (o *Options) print(rep Report) error {
	switch o.Output {
	// Messages quote the cluster: shown, never obeyed.
	case "json":
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(o.Out, printing.Text(string(b)))
		return nil
	case "yaml":
		b, err := yaml.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Fprint(o.Out, printing.Text(string(b)))
		return nil
	}
	printText(o.Out, rep, printing.Color(o.Out))
	return nil
}

var colors = map[Status]string{OK: "\x1b[32m", Warn: "\x1b[33m", Fail: "\x1b[31m", Skip: "\x1b[2m"}

// printText writes one line per check, the fix on the same line, details
// indented below it.
func printText(w io.Writer, rep Report, color bool) {
	who := ""
	if rep.User != "" {
		who = fmt.Sprintf(" as %q", rep.User)
	}
	fmt.Fprintf(w, "kubectl sched doctor (plugin %s)%s, namespace %s, operator namespace %s\n", printing.Safe(rep.PluginVersion, who, rep.Namespace, rep.OperatorNamespace)...)
	for _, c := range rep.Checks {
		status := fmt.Sprintf("%-4s", c.Status)
		if color {
			status = colors[c.Status] + status + "\x1b[0m"
		}
		line := fmt.Sprintf("%-13s %s", c.Name, printing.OneLine(c.Message))
		if c.Fix != "" {
			line += "; fix: " + printing.OneLine(c.Fix)
		}
		fmt.Fprintf(w, "%s  %s\n", status, line)
		for _, d := range c.Details {
			fmt.Fprintf(w, "      %s\n", printing.Line(d))
		}
	}
}
