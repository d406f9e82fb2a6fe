package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-sched/kubectl-sched/api/secretstore"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/buildinfo"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/waitfor"
)

var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// UninstallOptions for `kubectl sched uninstall`.
type UninstallOptions struct {
	kube.ClientOptions

	KeepCRDs           bool
	Yes                bool
	DryRun             string
	Timeout            time.Duration
	SchedulerNamespace string

	namespace string
	objects   []*unstructured.Unstructured
	dynamic   dynamic.Interface
}

// NewUninstallCommand returns `kubectl sched uninstall`.
func NewUninstallCommand(c kube.ClientOptions) *cobra.Command {
	o := &UninstallOptions{ClientOptions: c, Timeout: 2 * time.Minute, SchedulerNamespace: schedv1.DefaultSchedulerNamespace}
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove the operator, its RBAC and (unless --keep-crds) the CRDs with every object",
		Long: `Remove what 'kubectl sched install' applied. Deleting the CRDs deletes every
UserDeployment, AgentTask, Workflow, CronWorkflow and SchedExt in the cluster, and with them
their Jobs, Deployments and scheduler DaemonSets: it needs --yes. Task pods
still held for their outputs are released, so that none is left terminating
without the operator. With --keep-crds the objects stay (and stop being
reconciled).`,
		Example: `  # Remove everything, objects included
  kubectl sched uninstall --yes

  # Remove the operator only
  kubectl sched uninstall --keep-crds

  # See what would be removed
  kubectl sched uninstall --dry-run=server`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.BoolVar(&o.KeepCRDs, "keep-crds", false, "Keep the CRDs and so every kubectl-sched object.")
	f.BoolVar(&o.Yes, "yes", false, "Confirm that the CRDs and every kubectl-sched object are to be deleted.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" lists what exists and would be deleted; "server" has the API server check each deletion.`)
	cmdutil.AddWaitFlags(cmd, nil, "", &o.Timeout, "How long to wait for the CRDs to be gone; exit code 12 after.")
	f.StringVar(&o.SchedulerNamespace, "scheduler-namespace", o.SchedulerNamespace, "Namespace the operator created for SchedExt DaemonSets; deleted with the CRDs.")
	return cmd
}

// Complete reads the manifests and builds the client.
func (o *UninstallOptions) Complete(cmd *cobra.Command, args []string) error {
	o.namespace = operatorNamespace(o.Flags)
	var err error
	if o.objects, err = manifests.Objects(manifests.ManifestImage, o.namespace, buildinfo.ClientVersion()); err != nil {
		return fmt.Errorf("the embedded manifests are broken: %w", err)
	}
	// The External Secrets key policy, when install added it.
	optional, err := manifests.ExternalSecretsPolicy(secretstore.Placeholder+"/", nil)
	if err != nil {
		return fmt.Errorf("the embedded manifests are broken: %w", err)
	}
	o.objects = append(o.objects, optional...)
	if o.KeepCRDs {
		o.objects = slices.DeleteFunc(o.objects, func(u *unstructured.Unstructured) bool { return u.GetKind() == "CustomResourceDefinition" })
	}
	if err := o.ClientOptions.Complete(cmd, args); err != nil {
		return err
	}
	o.dynamic = o.Clients.Dynamic
	return nil
}

// Validate checks the flags.
func (o *UninstallOptions) Validate() error {
	return cmdutil.ValidateDryRun(o.DryRun)
}

// Run deletes the CRDs first, while the operator still runs to release the
// finalizers of the pods it owns, then the operator and its RBAC.
func (o *UninstallOptions) Run(ctx context.Context) error {
	if !o.KeepCRDs && !o.Yes && o.DryRun == "" {
		return cmdutil.Usage("Run again with --yes to delete them, or with --keep-crds to remove only the operator.",
			"uninstall deletes the kubectl-sched CRDs and with them every UserDeployment, AgentTask, Workflow, CronWorkflow and SchedExt in the cluster%s", o.census(ctx))
	}
	if !o.KeepCRDs && o.DryRun == "" {
		fmt.Fprintf(o.ErrOut, "Warning: deleting the CRDs deletes every kubectl-sched object in the cluster%s.\n", o.census(ctx))
	}
	suffix := cmdutil.DryRunSuffix(o.DryRun)
	order := slices.Clone(o.objects)
	// CRDs first (see above), then everything else in reverse apply order.
	slices.SortStableFunc(order, func(a, b *unstructured.Unstructured) int {
		ca, cb := a.GetKind() == "CustomResourceDefinition", b.GetKind() == "CustomResourceDefinition"
		switch {
		case ca && !cb:
			return -1
		case cb && !ca:
			return 1
		}
		return manifests.Rank(b) - manifests.Rank(a)
	})
	if !o.KeepCRDs {
		// The operator made this namespace for scheduler DaemonSets; it goes
		// once the SchedExts are gone, if the operator's label says it is ours.
		order = append(order, o.schedulerNamespace(ctx)...)
	}
	// Last, once the operator cannot make them again.
	order = append(order, o.podLogBindings(ctx)...)
	var crds []string
	for i, obj := range order {
		if err := o.delete(ctx, obj, suffix); err != nil {
			return err
		}
		if obj.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, obj.GetName())
		}
		last := i == len(order)-1 || order[i+1].GetKind() != "CustomResourceDefinition"
		if obj.GetKind() == "CustomResourceDefinition" && last && o.DryRun == "" {
			if err := o.waitGone(ctx, crds); err != nil {
				return err
			}
			o.releaseTaskPods(ctx)
		}
	}
	return nil
}

func (o *UninstallOptions) schedulerNamespace(ctx context.Context) []*unstructured.Unstructured {
	ns, err := o.dynamic.Resource(namespaceGVR).Get(ctx, o.SchedulerNamespace, metav1.GetOptions{})
	if err != nil || ns.GetLabels()[schedv1.LabelManagedBy] != schedv1.ManagedByValue {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(o.SchedulerNamespace)
	return []*unstructured.Unstructured{u}
}

var roleBindingGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}

// podLogBindings are the RoleBindings the operator made for itself in the
// namespaces it serves, to read its task pods' logs. They are not in the
// manifests, and left behind they would name a ClusterRole that is gone. A
// failure to list them is a warning: the rest of the uninstall goes on.
func (o *UninstallOptions) podLogBindings(ctx context.Context) []*unstructured.Unstructured {
	list, err := o.dynamic.Resource(roleBindingGVR).List(ctx, metav1.ListOptions{
		LabelSelector: schedv1.LabelManagedBy + "=" + schedv1.ManagedByValue,
		FieldSelector: "metadata.name=" + schedv1.OperatorPodLogsRole,
	})
	if err != nil {
		fmt.Fprintf(o.ErrOut, "Warning: cannot list the operator's RoleBindings %s (%v); remove them with: kubectl delete rolebinding -A -l %s=%s --field-selector metadata.name=%s\n",
			schedv1.OperatorPodLogsRole, err, schedv1.LabelManagedBy, schedv1.ManagedByValue, schedv1.OperatorPodLogsRole)
		return nil
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		rb := &list.Items[i]
		if name, _, _ := unstructured.NestedString(rb.Object, "roleRef", "name"); name != schedv1.OperatorPodLogsRole {
			continue
		}
		rb.SetAPIVersion("rbac.authorization.k8s.io/v1")
		rb.SetKind("RoleBinding")
		out = append(out, rb)
	}
	return out
}

// delete deletes obj and prints a line; what does not exist is skipped,
// so uninstall can be run again after a partial one.
func (o *UninstallOptions) delete(ctx context.Context, obj *unstructured.Unstructured, suffix string) error {
	res := o.dynamic.Resource(manifests.Resource(obj.GroupVersionKind())).Namespace(obj.GetNamespace())
	var err error
	switch o.DryRun {
	case "client":
		_, err = res.Get(ctx, obj.GetName(), metav1.GetOptions{})
	case "server":
		err = res.Delete(ctx, obj.GetName(), metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	default:
		policy := metav1.DeletePropagationBackground
		err = res.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy})
	}
	if apierrors.IsNotFound(err) && !cmdutil.NotInstalled(err) {
		return nil
	}
	if err != nil {
		return cmdutil.API(err, "delete", what(obj))
	}
	gk := obj.GroupVersionKind().GroupKind()
	fmt.Fprintf(o.Out, "%s %q deleted%s\n", strings.ToLower(gk.String()), obj.GetName(), suffix)
	return nil
}

// releaseTaskPods removes the outputs finalizer from every AgentTask pod
// that still has it. With the AgentTasks gone there are no outputs left to
// record, and once the operator is gone nothing else would remove it: the
// garbage collector's deletion of those pods would never finish. A failure
// here is a warning with the command that does it by hand; the rest of the
// uninstall goes on.
func (o *UninstallOptions) releaseTaskPods(ctx context.Context) {
	res := o.dynamic.Resource(podGVR)
	pods, err := res.List(ctx, metav1.ListOptions{LabelSelector: schedv1.LabelAgentTask})
	if err != nil {
		fmt.Fprintf(o.ErrOut, "Warning: cannot list AgentTask pods to release their outputs finalizer (%v); pods left terminating need: %s\n", err, releaseByHand)
		return
	}
	released := 0
	for _, pod := range pods.Items {
		if !slices.Contains(pod.GetFinalizers(), schedv1.FinalizerOutputs) {
			continue
		}
		_, err := res.Namespace(pod.GetNamespace()).Patch(ctx, pod.GetName(), types.StrategicMergePatchType, []byte(schedv1.ReleaseOutputsPatch), metav1.PatchOptions{FieldManager: kube.FieldManager})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			fmt.Fprintf(o.ErrOut, "Warning: cannot release pod %s/%s (%v); run: %s\n", pod.GetNamespace(), pod.GetName(), err, releaseByHand)
		default:
			released++
		}
	}
	if released > 0 {
		fmt.Fprintf(o.Out, "released the outputs finalizer of %d AgentTask pod(s)\n", released)
	}
}

var podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// releaseByHand is the same release for one pod, for when uninstall cannot.
const releaseByHand = "kubectl patch pod POD -n NAMESPACE -p '" + schedv1.ReleaseOutputsPatch + "'"

// waitGone follows the CRDs by watch until the API server has removed
// them, which it does after deleting every object of them.
func (o *UninstallOptions) waitGone(ctx context.Context, crds []string) error {
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	for _, name := range crds {
		err := waitfor.Resource(wctx, o.dynamic.Resource(crdGVR), name, func(crd *unstructured.Unstructured) (bool, error) {
			return crd == nil, nil
		})
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return err
		case wctx.Err() != nil:
			return cmdutil.Errorf(cmdutil.ExitWatchTimeout, "'kubectl get crd "+name+" -o yaml' shows what holds it; run uninstall again to finish.",
				"timed out after %s waiting for CRD %s to be deleted", o.Timeout, name)
		default:
			return cmdutil.API(err, "get", fmt.Sprintf("customresourcedefinitions.apiextensions.k8s.io %q", name))
		}
	}
	return nil
}

// census counts the objects the CRDs' deletion would take, for the
// warning; it says nothing when they cannot be counted.
func (o *UninstallOptions) census(ctx context.Context) string {
	if o.KeepCRDs {
		return ""
	}
	var parts []string
	for _, k := range kinds.Kinds {
		// One item and the server's count of the rest: cheap on big clusters.
		list, err := o.dynamic.Resource(k.GVR()).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return ""
		}
		n := int64(len(list.Items))
		if rest := list.GetRemainingItemCount(); rest != nil {
			n += *rest
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k.Plural))
		}
	}
	if len(parts) == 0 {
		return " (there are none now)"
	}
	return " (now: " + strings.Join(parts, ", ") + ")"
}
