// Package version implements `kubectl sched version`.
package version

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// Version is the plugin's version, set at build time with
// -ldflags "-X github.com/kubectl-sched/kubectl-sched/plugin/cmd/version.Version=v1.2.3".
var Version = ""

// OperatorLabel selects the operator's Deployment; its
// app.kubernetes.io/version label is the operator version.
const OperatorLabel = "app.kubernetes.io/name=kubectl-sched-operator"

// Info is what `version -o json|yaml` prints.
type Info struct {
	ClientVersion   string `json:"clientVersion"`
	OperatorVersion string `json:"operatorVersion,omitempty"`
	// OperatorStatus says why there is no operator version.
	OperatorStatus string `json:"operatorStatus,omitempty"`
}

// Options for `kubectl sched version`.
type Options struct {
	Flags      *genericclioptions.ConfigFlags
	ClientOnly bool
	Output     string
	genericiooptions.IOStreams

	client kubernetes.Interface
}

// NewCommand returns `kubectl sched version`.
func NewCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{Flags: flags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin version and, when it can reach one, the operator version",
		Example: `  kubectl sched version
  kubectl sched version --client -o json`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	cmd.Flags().BoolVar(&o.ClientOnly, "client", false, "Print only the plugin version; do not contact the cluster.")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml.")
	return cmd
}

// Complete builds the clients.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	if o.ClientOnly {
		return nil
	}
	cfg, err := o.Flags.ToRESTConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	o.client, err = kubernetes.NewForConfig(cfg)
	return err
}

// Validate checks the flags.
func (o *Options) Validate() error {
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return cmdutil.Usage("Use -o json or -o yaml.", "--output must be json or yaml, got %q", o.Output)
}

// Run prints the versions.
func (o *Options) Run(ctx context.Context) error {
	info := Info{ClientVersion: ClientVersion()}
	var reachErr error
	if !o.ClientOnly {
		info.OperatorVersion, info.OperatorStatus, reachErr = o.operatorVersion(ctx)
	}
	switch o.Output {
	case "json":
		b, _ := json.MarshalIndent(info, "", "  ")
		fmt.Fprintln(o.Out, string(b))
	case "yaml":
		b, _ := yaml.Marshal(info)
		fmt.Fprint(o.Out, string(b))
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
	}
	// Like kubectl version: the client part prints, and the exit code says
	// the cluster could not be asked.
	return reachErr
}

// operatorVersion reads the operator Deployment's version label. A status
// explains a missing version; err is set when the cluster could not be asked.
func (o *Options) operatorVersion(ctx context.Context) (version, status string, err error) {
	list, err := o.client.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: OperatorLabel})
	if err != nil {
		return "", "cluster not reachable", cmdutil.API(err, "list", "the operator Deployment")
	}
	if len(list.Items) == 0 {
		return "", "operator not installed; run 'kubectl sched install'", nil
	}
	d := list.Items[0]
	if v := d.Labels["app.kubernetes.io/version"]; v != "" {
		return v, "", nil
	}
	return "", fmt.Sprintf("Deployment %s/%s has no app.kubernetes.io/version label", d.Namespace, d.Name), nil
}

// ClientVersion is the build-time version, or the module version when built
// with go install, or "devel".
func ClientVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
