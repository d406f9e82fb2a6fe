// Package install implements `kubectl sched install` and `uninstall`: the
// CRDs, RBAC and operator Deployment of config/, embedded in the binary,
// applied with server-side apply or removed.
package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-sched/kubectl-sched/api/accounts"
	"github.com/kubectl-sched/kubectl-sched/api/secretstore"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/buildinfo"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/waitfor"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Options for `kubectl sched install`.
type Options struct {
	kube.ClientOptions
	Print *printing.Flags

	Image string
	// PinImage resolves the image's tag to the digest its registry serves,
	// in a client dry run too (pinned manifests to keep in git).
	PinImage bool
	// NodePool runs the operator on that pool's nodes, tolerating its taint.
	NodePool string
	// OperatorMemory is the memory each operator replica asks for and is
	// limited to; empty keeps config/manager's.
	OperatorMemory string
	DryRun         string
	Wait           bool
	Timeout        time.Duration
	// WithoutOperator leaves out the operator Deployment, its Service and
	// its settings.
	WithoutOperator bool
	// ServiceAccountsWebhook installs the operator's service-accounts
	// webhook (operator/accounts): its certificate, Secret, Service and
	// ValidatingWebhookConfiguration.
	ServiceAccountsWebhook bool
	// ExternalSecretsPolicy is auto (add the External Secrets key policy
	// when the cluster serves External Secrets), true or false.
	ExternalSecretsPolicy string

	settingFlags *settingFlags
	// Settings are the operator's settings as installed: the manifest's
	// defaults, then what the cluster has, then the flags given.
	Settings map[string]string

	namespace string
	image     string // the operator image as given, before pinning
	objects   []*unstructured.Unstructured
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
}

// NewCommand returns `kubectl sched install`.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	o := &Options{ClientOptions: c, Print: printing.NewFlags(), Timeout: 2 * time.Minute, ExternalSecretsPolicy: "auto"}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install the CRDs, RBAC and operator in the cluster (server-side apply)",
		Long: `Apply the kubectl-sched CRDs, the operator's RBAC and its Deployment: the same
manifests as config/ in the repository, embedded in the plugin. The operator goes
in namespace kubectl-sched-system unless -n says otherwise, with the operator image
of this plugin's version (a development build: the release config/ pins, never
:latest) unless --image says otherwise (REPO:TAG or REPO@sha256:DIGEST). A
tag is pinned: the Deployment gets REPO:TAG@sha256:... as the registry serves
it now; when the registry cannot be reached (air-gapped), the tag stays and a
warning says so. Running it again updates the installation. Needs
cluster-admin.

The operator's cluster settings (ingress domain and class, Traefik, External
Secrets store, cert-manager ClusterIssuer, priority classes, scheduler images)
go into the ConfigMap kubectl-sched-operator-config, which the operator reads
as environment variables. A setting not given keeps its installed value (or
the default on a first install); a change restarts the operator. install
creates the PriorityClasses kubectl-sched-critical, -high, -medium and -low
that placement.priority maps to, except for levels mapped elsewhere with
--priority-class.

When the cluster serves External Secrets (external-secrets.io), or a
--cluster-secret-store is set, install also adds the admission policy
kubectl-sched-external-secret-keys: every ExternalSecret and PushSecret that
reaches a ClusterSecretStore must keep to its namespace's keys
(--external-secret-key-template), whoever creates it.
--external-secrets-policy=true adds it anyway, false leaves it out.`,
		Example: `  # Install, and wait until the operator is available
  kubectl sched install --wait

  # A real cluster: apps under *.apps.example.org with certificates from
  # cert-manager, secrets from Vault through External Secrets
  kubectl sched install --ingress-domain apps.example.org --ingress-class nginx \
    --cluster-issuer letsencrypt-prod --cluster-secret-store vault --wait

  # Map High to an existing PriorityClass, and pin a scheduler image
  kubectl sched install --priority-class High=business-critical \
    --scheduler-image scx_lavd=registry.example.org/scx:v1.0.14

  # Print the manifests instead, without contacting the cluster
  kubectl sched install --dry-run=client -o yaml

  # Another namespace and a pinned image
  kubectl sched install -n platform --image registry.example.com/kubectl-sched/operator:v0.3.0`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Image, "image", "", "Operator image, REPO:TAG or REPO@sha256:DIGEST; a tag is pinned to its digest (default "+manifests.DefaultImage(buildinfo.ClientVersion())+").")
	f.BoolVar(&o.PinImage, "pin-image", true, "Look up the digest the image's registry serves for its tag and install REPO:TAG@DIGEST; false keeps the tag (a registry this machine cannot reach, images loaded onto the nodes).")
	f.StringVar(&o.NodePool, "node-pool", "", "Run the operator on the nodes of this pool (label "+schedv1.NodeLabelPool+"), tolerating the pool's taint, as placement.nodePools does for workloads.")
	f.StringVar(&o.OperatorMemory, "operator-memory", "", "Memory each operator replica asks for and is limited to, such as 1Gi: 128Mi per 10,000 objects it caches, plus 128Mi (default "+DefaultOperatorMemory+", about 30,000; docs/admins/sizing.md). Give it on every install.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" prints the objects without contacting the cluster; "server" has the API server check them.`)
	f.BoolVar(&o.WithoutOperator, "without-operator", false, "Install the CRDs, admission policy and RBAC but not the operator Deployment, to run the operator elsewhere (make run, or the local demo).")
	f.BoolVar(&o.ServiceAccountsWebhook, "service-accounts-webhook", false, "Also install the operator's validating webhook that lets its own requests run a Job only as its AgentTask's service account, a step's AgentTask only as its step's, and a schedule's run only as its workflowSpec: a CA and serving certificate (valid 3 years; install renews it when less than 90 days are left), the Secret "+accounts.Secret+", the Service "+accounts.Service+" and the ValidatingWebhookConfiguration "+accounts.ConfigurationName+". The API server must reach the operator's pods through the Service (kube-proxy, or kube-apiserver --enable-aggregator-routing).")
	f.StringVar(&o.ExternalSecretsPolicy, "external-secrets-policy", o.ExternalSecretsPolicy, "auto adds the admission policy that keeps every ExternalSecret and PushSecret to its namespace's keys of a ClusterSecretStore when --cluster-secret-store is set or the cluster serves External Secrets (--dry-run=client asks the cluster nothing); true adds it anyway, false leaves it out.")
	cmdutil.AddWaitFlags(cmd, &o.Wait, "Also wait until the operator Deployment is available.", &o.Timeout, "How long to wait for the CRDs (and with --wait the operator); exit code 12 after.")
	o.settingFlags = addSettingFlags(f)
	o.Print.AddFlags(cmd, false)
	return cmd
}

// operatorNamespace is -n when given; never the kubeconfig's namespace,
// which is about the user's work, not where the operator lives.
func operatorNamespace(flags *genericclioptions.ConfigFlags) string {
	if flags.Namespace != nil && *flags.Namespace != "" {
		return *flags.Namespace
	}
	return manifests.ManifestNamespace
}

// Complete reads the manifests and, unless nothing is sent, builds the client.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.namespace = operatorNamespace(o.Flags)
	image := o.Image
	if image == "" {
		image = manifests.DefaultImage(buildinfo.ClientVersion())
	} else if err := checkImageRef(image); err != nil {
		return err
	}
	o.image = image
	var err error
	if o.objects, err = manifests.Objects(image, o.namespace, manifests.VersionOf(image, buildinfo.ClientVersion())); err != nil {
		return fmt.Errorf("the embedded manifests are broken: %w", err)
	}
	if o.NodePool != "" {
		if err := placeOnPool(o.objects, o.NodePool); err != nil {
			return err
		}
	}
	if o.OperatorMemory != "" {
		if err := setOperatorMemory(o.objects, o.OperatorMemory); err != nil {
			return err
		}
	}
	if o.WithoutOperator {
		o.objects = slices.DeleteFunc(o.objects, func(u *unstructured.Unstructured) bool {
			// The tiers stay: the operator run elsewhere reads them.
			return u.GetKind() == "Deployment" || u.GetKind() == "Service" || (u.GetKind() == "ConfigMap" && u.GetName() == manifests.ConfigMapName)
		})
	}
	if o.DryRun == "client" {
		return nil
	}
	if err := o.ClientOptions.Complete(cmd, args); err != nil {
		return err
	}
	o.dynamic = o.Clients.Dynamic
	o.discovery = o.Clients.Kube.Discovery()
	return nil
}

// placeOnPool selects the pool's nodes for the operator's pods and tolerates
// the taint that reserves the pool.
func placeOnPool(objs []*unstructured.Unstructured, pool string) error {
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		if err := unstructured.SetNestedStringMap(o.Object, map[string]string{schedv1.NodeLabelPool: pool}, "spec", "template", "spec", "nodeSelector"); err != nil {
			return err
		}
		tol := map[string]any{"key": schedv1.TaintPool, "operator": "Equal", "value": pool, "effect": "NoSchedule"}
		if err := unstructured.SetNestedSlice(o.Object, []any{tol}, "spec", "template", "spec", "tolerations"); err != nil {
			return err
		}
	}
	return nil
}

// DefaultOperatorMemory is config/manager's memory request and limit.
const DefaultOperatorMemory = "512Mi"

// minOperatorMemory is what the operator needs caching nothing, with room
// for its start.
var minOperatorMemory = resource.MustParse("128Mi")

// setOperatorMemory makes memory the operator container's memory request
// and limit; the operator sets Go's soft limit from the limit.
func setOperatorMemory(objs []*unstructured.Unstructured, memory string) error {
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if err != nil || len(containers) == 0 {
			return fmt.Errorf("the embedded manifests are broken: the Deployment has no containers")
		}
		c := containers[0].(map[string]any)
		for _, kind := range []string{"requests", "limits"} {
			if err := unstructured.SetNestedField(c, memory, "resources", kind, "memory"); err != nil {
				return err
			}
		}
		return unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
	}
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	if err := o.settingFlags.validate(); err != nil {
		return err
	}
	if !slices.Contains([]string{"auto", "true", "false"}, o.ExternalSecretsPolicy) {
		return cmdutil.Usage("See 'kubectl sched install --help'.", "--external-secrets-policy %q must be auto, true or false", o.ExternalSecretsPolicy)
	}
	if o.NodePool != "" {
		if errs := validation.IsDNS1123Label(o.NodePool); len(errs) > 0 {
			return cmdutil.Usage("Name a node pool as nodes label it: lower-case letters, digits and '-'.", "--node-pool %q: %s", o.NodePool, strings.Join(errs, "; "))
		}
	}
	if o.OperatorMemory != "" {
		q, err := resource.ParseQuantity(o.OperatorMemory)
		switch {
		case err != nil:
			return cmdutil.Usage("Give a quantity, such as 1Gi: 128Mi per 10,000 objects the operator caches, plus 128Mi.", "--operator-memory %q is not a quantity", o.OperatorMemory)
		case q.Cmp(minOperatorMemory) < 0:
			return cmdutil.Usage("Give at least 128Mi: 128Mi per 10,000 objects the operator caches, plus 128Mi.", "--operator-memory %q is less than the operator needs caching nothing", o.OperatorMemory)
		}
	}
	if o.ServiceAccountsWebhook && o.WithoutOperator {
		return cmdutil.Usage("Leave out --service-accounts-webhook, or install the operator too.", "--service-accounts-webhook is served by the operator's Deployment, which --without-operator leaves out")
	}
	if o.Print.IsWide() {
		return cmdutil.Usage("Use -o yaml, json or name.", "install prints no table; -o wide does not apply")
	}
	return o.Print.Validate("Use -o yaml, json or name.")
}

// Run applies the objects in order, then waits for the CRDs.
func (o *Options) Run(ctx context.Context) error {
	if o.PinImage {
		o.pinOperator(ctx)
	}
	if err := o.configure(ctx); err != nil {
		return err
	}
	if o.ServiceAccountsWebhook {
		if err := o.addWebhook(ctx, time.Now()); err != nil {
			return err
		}
	}
	suffix := cmdutil.DryRunSuffix(o.DryRun)
	if o.DryRun == "client" {
		if !o.Print.IsTable() {
			return o.printObjects(o.objects)
		}
		for _, obj := range o.objects {
			fmt.Fprintf(o.Out, "%s serverside-applied%s\n", manifests.Qualified(obj), suffix)
		}
		return nil
	}
	// A server dry run cannot place objects in a namespace that does not
	// exist yet: say so instead of failing on the first of them.
	nsMissing := false
	if o.DryRun == "server" {
		_, err := o.dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, o.namespace, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return cmdutil.API(err, "get", fmt.Sprintf("namespaces %q", o.namespace))
		}
		nsMissing = apierrors.IsNotFound(err)
	}
	var applied []*unstructured.Unstructured
	var changes upgrade
	for _, obj := range o.objects {
		if nsMissing && obj.GetNamespace() != "" {
			fmt.Fprintf(o.Out, "%s skipped%s: namespace %q does not exist yet\n", manifests.Qualified(obj), suffix, o.namespace)
			continue
		}
		prev, err := o.current(ctx, obj)
		if err != nil {
			return err
		}
		out, err := o.apply(ctx, obj)
		if err != nil {
			return err
		}
		applied = append(applied, out)
		if !o.Print.IsTable() {
			continue
		}
		if o.DryRun == "server" {
			fmt.Fprintf(o.Out, "%s serverside-applied%s\n", manifests.Qualified(obj), suffix)
			continue
		}
		fmt.Fprintf(o.Out, "%s %s\n", manifests.Qualified(obj), changes.add(prev, out))
		if before, after := operatorImage(prev), operatorImage(out); prev != nil && before != after {
			fmt.Fprintf(o.Out, "  operator image: %s -> %s\n", before, after)
		}
	}
	if !o.Print.IsTable() {
		if err := o.printObjects(applied); err != nil {
			return err
		}
	}
	if o.DryRun == "server" {
		return nil
	}
	if err := o.waitEstablished(ctx); err != nil {
		return err
	}
	if o.Wait {
		if err := o.waitAvailable(ctx); err != nil {
			return err
		}
	}
	if o.Print.IsTable() {
		if line := changes.summary(); line != "" {
			fmt.Fprintln(o.Out, line)
		}
		if o.WithoutOperator {
			fmt.Fprintf(o.Out, "kubectl-sched's API and RBAC are installed; run the operator yourself as service account %s/kubectl-sched-operator.\n", o.namespace)
		} else {
			fmt.Fprintf(o.Out, "kubectl-sched is installed: the operator runs in namespace %s. 'kubectl sched version' shows it.\n", o.namespace)
		}
	}
	return nil
}

// configure resolves the settings and writes them into the objects. What
// the cluster has is kept, so a later install need not repeat the flags.
func (o *Options) configure(ctx context.Context) error {
	objs, err := manifests.Objects(manifests.ManifestImage, o.namespace, "")
	if err != nil {
		return fmt.Errorf("the embedded manifests are broken: %w", err)
	}
	base, err := manifestSettings(objs)
	if err != nil {
		return fmt.Errorf("the embedded manifests are broken: %w", err)
	}
	if o.DryRun != "client" {
		cm, err := o.dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(o.namespace).Get(ctx, manifests.ConfigMapName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case apierrors.IsForbidden(err):
			// Applying the CRDs, first, fails too and says so better.
		case err != nil:
			return cmdutil.API(err, "get", fmt.Sprintf("configmaps %q", manifests.ConfigMapName))
		default:
			installed, _, _ := unstructured.NestedStringMap(cm.Object, "data")
			for k := range base {
				if v, ok := installed[k]; ok {
					base[k] = v
				}
			}
		}
	}
	o.Settings = o.settingFlags.merge(base)
	if o.Settings["SCHEDULER_NAMESPACE"] == o.namespace {
		return cmdutil.Usage("Give the schedulers a namespace of their own with --scheduler-namespace.",
			"the scheduler namespace %q is the operator's: it admits privileged pods, which the operator's namespace must not", o.namespace)
	}
	if o.objects, err = configure(o.objects, o.Settings); err != nil {
		return err
	}
	return o.addExternalSecretsPolicy()
}

// addExternalSecretsPolicy adds the External Secrets key policy, with the
// settings written in, when --external-secrets-policy asks for it.
func (o *Options) addExternalSecretsPolicy() error {
	want := o.ExternalSecretsPolicy == "true"
	if o.ExternalSecretsPolicy == "auto" {
		// A configured store says External Secrets is meant to be used,
		// installed yet or not: the policy waits for it.
		want = o.Settings["CLUSTER_SECRET_STORE"] != ""
		if !want && o.DryRun != "client" {
			served, err := manifests.ExternalSecretsServed(o.discovery)
			if err != nil {
				return err
			}
			want = served
		}
	}
	if !want {
		return nil
	}
	template := o.Settings["EXTERNAL_SECRET_KEY_TEMPLATE"]
	if template == "" {
		if o.ExternalSecretsPolicy == "true" {
			return cmdutil.Usage("Give --external-secret-key-template, for example {{namespace}}/.",
				"--external-secrets-policy=true needs a key template, and --external-secret-key-template is empty (any key allowed)")
		}
		fmt.Fprintln(o.ErrOut, "Warning: External Secrets is served but --external-secret-key-template is empty: every namespace may read any key of a ClusterSecretStore. Set it (for example {{namespace}}/) to confine them.")
		return nil
	}
	objs, err := manifests.ExternalSecretsPolicy(template, secretstore.ParsePaths(o.Settings["EXTERNAL_SECRET_RESERVED_PATHS"]))
	if err != nil {
		return fmt.Errorf("the embedded manifests are broken: %w", err)
	}
	o.objects = append(o.objects, objs...)
	manifests.SortForApply(o.objects)
	return nil
}

func (o *Options) apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := obj.GroupVersionKind()
	res := o.dynamic.Resource(manifests.Resource(gvk)).Namespace(obj.GetNamespace())
	opts := metav1.ApplyOptions{FieldManager: kube.FieldManager, Force: true}
	if o.DryRun == "server" {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	out, err := res.Apply(ctx, obj.GetName(), obj, opts)
	if err != nil {
		return nil, cmdutil.API(err, "patch", what(obj))
	}
	return out, nil
}

// current reads obj as the cluster has it, nil when it does not exist yet
// or the user may not read it (the apply that follows says so better).
func (o *Options) current(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if o.DryRun == "server" {
		return nil, nil
	}
	res := o.dynamic.Resource(manifests.Resource(obj.GroupVersionKind())).Namespace(obj.GetNamespace())
	prev, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case err == nil:
		return prev, nil
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return nil, nil
	}
	return nil, cmdutil.API(err, "get", what(obj))
}

// what names an object as kubectl RBAC errors do: resource.group "name".
func what(obj *unstructured.Unstructured) string {
	gvr := manifests.Resource(obj.GroupVersionKind())
	r := gvr.Resource
	if gvr.Group != "" {
		r += "." + gvr.Group
	}
	return fmt.Sprintf("%s %q", r, obj.GetName())
}

// printObjects prints for -o: YAML documents one after another (ready for
// kubectl apply -f -), or a v1 List for JSON and the rest.
func (o *Options) printObjects(objs []*unstructured.Unstructured) error {
	if *o.Print.OutputFormat == "yaml" {
		p, err := o.Print.Printer()
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if err := p.PrintObj(obj, o.Out); err != nil {
				return err
			}
		}
		return nil
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}}
	for _, obj := range objs {
		list.Items = append(list.Items, *obj)
	}
	return o.Print.Print(list, o.Out)
}

// waitEstablished waits until the API server serves every CRD, following
// each by watch.
func (o *Options) waitEstablished(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	for _, obj := range o.objects {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		err := waitfor.Resource(wctx, o.dynamic.Resource(crdGVR), obj.GetName(), func(crd *unstructured.Unstructured) (bool, error) {
			if crd == nil {
				return false, apierrors.NewNotFound(crdGVR.GroupResource(), obj.GetName())
			}
			return hasCondition(crd, "Established"), nil
		})
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return err
		case wctx.Err() != nil:
			return cmdutil.Errorf(cmdutil.ExitWatchTimeout, "'kubectl get crd "+obj.GetName()+" -o yaml' shows its conditions.",
				"timed out after %s waiting for CRD %s to be established", o.Timeout, obj.GetName())
		default:
			return cmdutil.API(err, "get", what(obj))
		}
	}
	return nil
}

// waitAvailable follows the operator Deployment by watch until its
// Available condition holds.
func (o *Options) waitAvailable(ctx context.Context) error {
	var dep *unstructured.Unstructured
	for _, obj := range o.objects {
		if obj.GetKind() == "Deployment" {
			dep = obj
		}
	}
	if dep == nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	gvr := manifests.Resource(dep.GroupVersionKind())
	err := waitfor.Resource(wctx, o.dynamic.Resource(gvr).Namespace(dep.GetNamespace()), dep.GetName(), func(got *unstructured.Unstructured) (bool, error) {
		if got == nil {
			return false, apierrors.NewNotFound(gvr.GroupResource(), dep.GetName())
		}
		return hasCondition(got, "Available"), nil
	})
	switch {
	case err == nil, ctx.Err() != nil:
		return err
	case wctx.Err() != nil:
		return cmdutil.Errorf(cmdutil.ExitWatchTimeout,
			fmt.Sprintf("'kubectl -n %s describe deployment %s' shows why.", dep.GetNamespace(), dep.GetName()),
			"timed out after %s waiting for the operator Deployment to be available", o.Timeout)
	}
	return cmdutil.API(err, "get", what(dep))
}

func hasCondition(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// upgrade counts what an install changed, as kubectl apply says it: an
// object is created, configured (the apply changed it) or unchanged (the
// same resourceVersion after the apply as before).
type upgrade struct {
	created, configured, unchanged int
	// from is the version of the operator that was installed before.
	from string
}

func (u *upgrade) add(prev, out *unstructured.Unstructured) string {
	switch {
	case prev == nil:
		u.created++
		return "created"
	case prev.GetResourceVersion() == out.GetResourceVersion():
		u.unchanged++
		return "unchanged"
	}
	if prev.GetKind() == "Deployment" && prev.GetLabels()[manifests.VersionLabel] != out.GetLabels()[manifests.VersionLabel] {
		u.from = prev.GetLabels()[manifests.VersionLabel]
	}
	u.configured++
	return "configured"
}

// summary is one line on an install over an earlier one, "" on a first.
func (u *upgrade) summary() string {
	if u.configured+u.unchanged == 0 {
		return ""
	}
	line := fmt.Sprintf("Installed over an earlier install: %d configured, %d created, %d unchanged.", u.configured, u.created, u.unchanged)
	if u.from != "" {
		line = fmt.Sprintf("Upgraded from operator %s: %d configured, %d created, %d unchanged.", u.from, u.configured, u.created, u.unchanged)
	}
	return line
}

// operatorImage is the image of the operator Deployment obj, "" for
// other objects.
func operatorImage(obj *unstructured.Unstructured) string {
	if obj == nil || obj.GetKind() != "Deployment" {
		return ""
	}
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok && m["name"] == "manager" {
			image, _ := m["image"].(string)
			return image
		}
	}
	return ""
}
