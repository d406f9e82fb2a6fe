// Package version implements `kubectl sched version`.
package version

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/api/operatorstatus"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/buildinfo"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// Info is what `version -o json|yaml` prints.
type Info struct {
	ClientVersion   string `json:"clientVersion"`
	OperatorVersion string `json:"operatorVersion,omitempty"`
	// OperatorStatus says why there is no operator version.
	OperatorStatus string `json:"operatorStatus,omitempty"`
	// OptionalAPIs are the optional APIs as the operator last reported
	// them on its status Lease, at OptionalAPIsReportedAt.
	OptionalAPIs           []operatorstatus.OptionalAPI `json:"optionalAPIs,omitempty"`
	OptionalAPIsReportedAt string                       `json:"optionalAPIsReportedAt,omitempty"`
	// OptionalAPIsStatus says why they are unknown.
	OptionalAPIsStatus string `json:"optionalAPIsStatus,omitempty"`
}

// Options for `kubectl sched version`.
type Options struct {
	kube.ClientOptions
	ClientOnly bool
	Output     string

	client kubernetes.Interface
}

// NewCommand returns `kubectl sched version`.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	o := &Options{ClientOptions: c}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin version and, when it can reach one, the operator version and the optional APIs it uses",
		Example: `  kubectl sched version
  kubectl sched version --client -o json`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	cmd.Flags().BoolVar(&o.ClientOnly, "client", false, "Print only the plugin version; do not contact the cluster.")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml.")
	return cmd
}

// Complete builds the clients, unless --client.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	if o.ClientOnly {
		return nil
	}
	if err := o.ClientOptions.Complete(cmd, args); err != nil {
		return err
	}
	// A version must not hang on a cluster that does not answer.
	c, err := o.Clients.WithTimeout(5 * time.Second)
	if err != nil {
		return err
	}
	o.client = c.Kube
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	return cmdutil.ValidateJSONOrYAML(o.Output)
}

// Run prints the versions.
func (o *Options) Run(ctx context.Context) error {
	info := Info{ClientVersion: buildinfo.ClientVersion()}
	var reachErr error
	if !o.ClientOnly {
		var ns string
		info.OperatorVersion, info.OperatorStatus, ns, reachErr = o.operatorVersion(ctx)
		if reachErr == nil {
			o.optionalAPIs(ctx, ns, &info)
		}
	}
	// On stderr, so -o json|yaml stays parseable.
	if w := buildinfo.SkewWarning(info.ClientVersion, info.OperatorVersion); w != "" {
		fmt.Fprintln(o.ErrOut, printing.Line(w))
	}
	switch o.Output {
	// The operator's report is cluster data: shown, never obeyed.
	case "json":
		b, _ := json.MarshalIndent(info, "", "  ")
		fmt.Fprintln(o.Out, printing.Text(string(b)))
	case "yaml":
		b, _ := yaml.Marshal(info)
		fmt.Fprint(o.Out, printing.Text(string(b)))
	default:
		fmt.Fprintf(o.Out, "Client Version: %s\n", info.ClientVersion)
		if o.ClientOnly {
			return nil
		}
		if info.OperatorVersion != "" {
			fmt.Fprintf(o.Out, "Operator Version: %s\n", info.OperatorVersion)
		} else {
			fmt.Fprintf(o.Out, "Operator Version: unknown (%s)\n", info.OperatorStatus)
		}
		if reachErr != nil {
			break
		}
		if len(info.OptionalAPIs) == 0 {
			fmt.Fprintf(o.Out, "Optional APIs: unknown (%s)\n", printing.OneLine(info.OptionalAPIsStatus))
			break
		}
		fmt.Fprintf(o.Out, "Optional APIs (as the operator reported at %s):\n", info.OptionalAPIsReportedAt)
		for _, a := range info.OptionalAPIs {
			fmt.Fprintf(o.Out, "  %s\n", printing.OneLine(a.String()))
		}
	}
	// Like kubectl version: the client part prints, and the exit code says
	// the cluster could not be asked.
	return reachErr
}

// operatorVersion reads the operator Deployment's version label and says
// which namespace the operator runs in (the default one when there is no
// Deployment: an operator run as a local process). A status explains a
// missing version; err is set when the cluster could not be asked.
func (o *Options) operatorVersion(ctx context.Context) (version, status, ns string, err error) {
	list, err := o.client.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: manifests.OperatorLabel})
	if err != nil {
		return "", "cluster not reachable", "", cmdutil.API(err, "list", "the operator Deployment")
	}
	if len(list.Items) == 0 {
		return "", "operator not installed; run 'kubectl sched install'", schedv1.DefaultOperatorNamespace, nil
	}
	d := list.Items[0]
	if v := d.Labels["app.kubernetes.io/version"]; v != "" {
		return v, "", d.Namespace, nil
	}
	return "", fmt.Sprintf("Deployment %s/%s has no app.kubernetes.io/version label", d.Namespace, d.Name), d.Namespace, nil
}

// optionalAPIs reads what the operator reports of the optional APIs on its
// status Lease in ns, or why they are unknown. Not being able to read it
// fails nothing: the versions printed.
func (o *Options) optionalAPIs(ctx context.Context, ns string, info *Info) {
	where := fmt.Sprintf("Lease %s/%s", ns, operatorstatus.LeaseName)
	lease, err := o.client.CoordinationV1().Leases(ns).Get(ctx, operatorstatus.LeaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		info.OptionalAPIsStatus = fmt.Sprintf("the operator has not reported them: no %s; is it running?", where)
		return
	case apierrors.IsForbidden(err):
		info.OptionalAPIsStatus = fmt.Sprintf("you may not get %s: a cluster admin can", where)
		return
	case err != nil:
		info.OptionalAPIsStatus = fmt.Sprintf("cannot read %s: %v", where, err)
		return
	}
	value, ok := lease.Annotations[operatorstatus.AnnotationOptionalAPIs]
	if !ok {
		info.OptionalAPIsStatus = fmt.Sprintf("%s has no annotation %s; is the operator older than this plugin?", where, operatorstatus.AnnotationOptionalAPIs)
		return
	}
	apis, err := operatorstatus.Decode(value)
	if err != nil {
		info.OptionalAPIsStatus = fmt.Sprintf("%s: %v", where, err)
		return
	}
	info.OptionalAPIs = apis
	if t := lease.Spec.RenewTime; t != nil {
		info.OptionalAPIsReportedAt = t.UTC().Format(time.RFC3339)
	}
}
