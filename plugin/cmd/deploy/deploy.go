// Package deploy implements `kubectl sched deploy`: render a template into
// a UserDeployment, or make a one-service one from an image (image.go),
// apply it and its Secret with server-side apply, and optionally wait
// until it runs. A redeploy keeps the replicas a scale set (keep.go).
package deploy

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/appwait"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/quota"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/templates"
)

const examples = `  # One image as a public app, without a template; prints its URL
  kubectl sched deploy hello --image ghcr.io/example/hello:1.0 --port 8080 --env GREETING=hi

  # A web front end and an API, from the built-in catalog
  kubectl sched deploy shop --template web-app --set apiImage=ghcr.io/example/shop-api:1.4.0

  # An API with PostgreSQL; the password goes into a Secret, never the UserDeployment
  kubectl sched deploy orders --template api-postgres -f values.yaml --secret-file POSTGRES_PASSWORD=./db-password

  # Wait until it runs and print its URL
  kubectl sched deploy shop --template web-app --set apiImage=api:1 --wait --timeout 3m

  # See what would be applied
  kubectl sched deploy shop --template ./my-app.yaml --dry-run=client -o yaml`

// udKind is the kind deploy applies.
var udKind = kinds.UserDeployment

// Options for `kubectl sched deploy`.
type Options struct {
	kube.ClientOptions
	Name string
	// The template and its values; deploy takes no -f.
	templates.SourceFlags
	CreateNamespace bool
	DryRun          string
	Output          string
	ShowManaged     bool
	Wait            bool
	Timeout         time.Duration
	Image           ImageFlags

	print   *genericclioptions.PrintFlags
	params  map[string]string
	secrets map[string][]byte
	// changed are the flags given, by name.
	changed map[string]bool
}

// NewCommand returns `kubectl sched deploy`.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	o := &Options{ClientOptions: c, Timeout: 5 * time.Minute}
	cmd := &cobra.Command{
		Use:   "deploy NAME (--template TEMPLATE [--set NAME=VALUE]... [-f values.yaml] | --image IMAGE [--port 8080] [--env NAME=VALUE]... [--replicas N] [--public|--internal]) [--secret NAME=VALUE]...",
		Short: "Deploy an app: render a template into a UserDeployment, or run one image, and apply it",
		Long: `Deploy renders a UserDeployment template (see 'kubectl sched template list'),
or with --image makes a UserDeployment of one service, web, that runs the
image, and applies it with server-side apply as field manager kubectl-sched.
An --image app is public (its URL, which deploy prints, routes to --port) unless
--internal; it is Running once the port accepts connections. Values of
secrets (secret parameters of a template, any --secret with --image) go into
the Secret NAME-secrets, which the UserDeployment references (an --image
app's service gets each as an environment variable); they are never printed
or stored in the UserDeployment. A later deploy that omits a secret keeps
its current value.

A deploy declares the whole app: deploying again replaces what 'kubectl
sched set' changed with what the template or command line says. Only the
replicas of a service are kept, as 'kubectl sched scale' set them, when the
template does not set them (or, with --image, without --replicas).

With --wait it follows the UserDeployment until it is Running (exit 0), or
Degraded (exit 10), or --timeout passes (exit 12), and prints its URL. What
may clear by itself (a pod waiting for a node or for its volume to bind,
containers being created) is printed as it waits, and is Degraded only once
a service makes no progress for the app's spec.progressDeadline (10m by
default).`,
		Example: examples,
		Args:    cmdutil.NameArg(udKind.Singular),
		RunE:    cmdutil.RunE(o),
	}
	f := cmd.Flags()
	o.AddFlags(cmd, udKind.Kind, "")
	f.BoolVar(&o.CreateNamespace, "create-namespace", false, "Create the namespace if it does not exist.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" prints what would be applied and sends nothing; "server" has the API server validate it without persisting.`)
	f.StringVarP(&o.Output, "output", "o", "", "Print the applied UserDeployment: json, yaml or name. Other messages then go to stderr.")
	f.BoolVar(&o.ShowManaged, "show-managed-fields", false, "Keep managedFields when printing with -o json or yaml.")
	cmdutil.AddWaitFlags(cmd, &o.Wait, "Wait until the UserDeployment is Running (exit 0) or Degraded (exit 10).", &o.Timeout, "")
	o.Image.AddFlags(f)
	return cmd
}

// Complete parses the values and builds the clients.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	o.changed = map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { o.changed[f.Name] = true })
	var err error
	if o.params, o.secrets, err = o.Values.Values(); err != nil {
		return err
	}
	o.print = genericclioptions.NewPrintFlags("").WithTypeSetter(kube.Scheme)
	o.print.OutputFormat = &o.Output
	o.print.JSONYamlPrintFlags.ShowManagedFields = o.ShowManaged
	if err = o.ClientOptions.Complete(cmd, args); err != nil {
		return cmdutil.Errorf(cmdutil.ExitUnreachable, "Check --kubeconfig and --context (kubectl config view).", "%v", err)
	}
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	switch {
	case o.Template != "" && o.changed["image"]:
		return cmdutil.Usage("Give --template to render a template, or --image to run one image without one.", "--image and --template cannot be used together")
	case o.Template == "" && !o.changed["image"]:
		return cmdutil.Usage("Name a template with --template ('kubectl sched template list' shows them), or an image to run with --image.", "--template or --image is required")
	}
	if err := o.validateImage(); err != nil {
		return err
	}
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
		return cmdutil.Usage("Names are lower-case letters, digits and '-', starting with a letter or digit.", "invalid name %q: %s", o.Name, strings.Join(errs, ", "))
	}
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	if o.Output != "" {
		if _, err := o.print.ToPrinter(); err != nil {
			return cmdutil.Usage("Use -o json, -o yaml or -o name.", "%v", err)
		}
	}
	return cmdutil.ValidateWait(o.Wait, o.Timeout, o.DryRun)
}

// msgOut is where progress messages go: stdout, unless stdout carries the
// object (-o).
func (o *Options) msgOut() io.Writer {
	if o.Output != "" {
		return o.ErrOut
	}
	return o.Out
}

// Run renders, applies and, with --wait, follows the UserDeployment.
func (o *Options) Run(ctx context.Context) error {
	c, ns := o.Clients, o.Clients.Namespace
	var ud *schedv1.UserDeployment
	var secret *corev1.Secret
	var err error
	if o.Template != "" {
		ud, secret, err = o.fromTemplate(ctx)
	} else {
		ud, secret, err = o.fromImage(ctx)
	}
	if err != nil {
		return err
	}
	current, err := o.current(ctx)
	if err != nil {
		return err
	}
	if err := o.keepScale(ud, current); err != nil {
		return err
	}

	nsCreated := false
	if o.CreateNamespace {
		if nsCreated, err = o.ensureNamespace(ctx, ns); err != nil {
			return err
		}
	}
	// The owner reference must be in every apply of the Secret: server-side
	// apply removes fields this manager set before and no longer sends.
	owned := current != nil && current.GetUID() != ""
	if secret != nil {
		if owned {
			setOwner(secret, ud.Name, current.GetUID())
		}
		if err := c.Apply(ctx, secret, o.DryRun); err != nil {
			return o.applyErr(ctx, err, "secrets", secret.Name)
		}
		if secret.UID != "" {
			// The apply returned the Secret, with its UID.
			if ud.Annotations == nil {
				ud.Annotations = map[string]string{}
			}
			ud.Annotations[schedv1.AnnotationSecretHash] = secretHash(secret)
		}
	}
	if err := c.Apply(ctx, ud, o.DryRun); err != nil {
		if o.DryRun == "server" && nsCreated && isNamespaceNotFound(err) {
			fmt.Fprintf(o.ErrOut, "note: namespace %s does not exist yet, so the API server cannot dry-run the UserDeployment in it.\n", ns)
			return nil
		}
		return o.applyErr(ctx, err, udKind.Resource(), o.Name)
	}
	// A new Secret is owned by its UserDeployment once that has a UID, so
	// deleting the app deletes the Secret too.
	if secret != nil && !owned && o.DryRun == "" {
		setOwner(secret, ud.Name, ud.UID)
		if err := c.Apply(ctx, secret, ""); err != nil {
			return o.applyErr(ctx, err, "secrets", secret.Name)
		}
	}

	if err := o.printResult(ud, secret); err != nil {
		return err
	}
	if o.Wait {
		return appwait.Wait(ctx, o.Clients.Client, ud, o.Timeout, o.msgOut(), o.nsFlag())
	}
	if o.DryRun == "" {
		if o.Template == "" && o.Image.exposure() == schedv1.ExposurePublic {
			o.printURL(ctx, ud)
		}
		fmt.Fprintf(o.msgOut(), "Follow it with: kubectl sched get ud %s%s -w\n", o.Name, o.nsFlag())
	}
	return nil
}

// fromTemplate renders the template.
func (o *Options) fromTemplate(ctx context.Context) (*schedv1.UserDeployment, *corev1.Secret, error) {
	ns := o.Clients.Namespace
	t, err := o.Get(ctx, o.Clients.Client, ns, false, o.ErrOut)
	if err != nil {
		return nil, nil, err
	}
	if kind := t.ObjectKind(); kind != udKind.Kind {
		return nil, nil, cmdutil.Usage(otherKindHint(kind, o.Template), "template %s makes a %s; deploy applies UserDeployment templates", t.Name(), kind)
	}
	if t.HasSecrets() {
		if err := o.keepSecrets(ctx, func(name string) bool {
			p, ok := t.Param(name)
			return ok && p.Secret
		}); err != nil {
			return nil, nil, err
		}
	}
	obj, secret, err := t.Render(templates.Input{Name: o.Name, Namespace: ns, Params: o.params, Secrets: o.secrets})
	if err != nil {
		return nil, nil, templates.CommandError(err)
	}
	templates.Announce(o.ErrOut, t)
	return obj.(*schedv1.UserDeployment), secret, nil
}

// current reads the app as it is, with its managed fields; nil when there
// is none, or it may not be read (the apply then says what is refused).
func (o *Options) current(ctx context.Context) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(udKind.GVK())
	err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: o.Clients.Namespace, Name: o.Name}, u)
	switch {
	case cmdutil.NotInstalled(err):
		return nil, notInstalled()
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return nil, nil
	case err != nil:
		return nil, cmdutil.API(err, "get", udKind.What("", o.Name))
	}
	return u, nil
}

// otherKindHint says which command handles a template deploy refuses.
func otherKindHint(kind, ref string) string {
	switch kind {
	case kinds.Workflow.Kind:
		return fmt.Sprintf("Run it with 'kubectl sched workflow run --template %s'.", ref)
	case kinds.AgentTask.Kind:
		return fmt.Sprintf("Run a task with 'kubectl sched task run', or apply this one with 'kubectl sched template render %s NAME | kubectl apply --server-side -f -'.", ref)
	case kinds.SchedExt.Kind:
		return fmt.Sprintf("Load a scheduler with 'kubectl sched schedext set', or apply this one with 'kubectl sched template render %s NAME | kubectl apply --server-side -f -'.", ref)
	}
	return "See 'kubectl sched template list' for the kind each template makes."
}

func (o *Options) nsFlag() string {
	if o.Clients.ExplicitNamespace && o.Clients.Namespace != "" {
		return " -n " + o.Clients.Namespace
	}
	return ""
}

// keepSecrets fills the secrets the command line omits, of those keep
// takes, from the Secret already in the cluster, so a redeploy need not
// repeat them and server-side apply does not drop them. The values are
// read into memory only to be sent back.
func (o *Options) keepSecrets(ctx context.Context, keep func(name string) bool) error {
	existing := &corev1.Secret{}
	key := client.ObjectKey{Namespace: o.Clients.Namespace, Name: templates.SecretName(o.Name)}
	err := o.Clients.Client.Get(ctx, key, existing)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return cmdutil.API(err, "get", fmt.Sprintf("secrets %q", key.Name))
	}
	for name, v := range existing.Data {
		if _, given := o.secrets[name]; !given && keep(name) {
			o.secrets[name] = v
		}
	}
	return nil
}

// secretHash is an HMAC of the Secret's values keyed with its UID: it
// changes with any value, and cannot be checked against guessed values by
// someone who cannot read the Secret.
func secretHash(secret *corev1.Secret) string {
	mac := hmac.New(sha256.New, []byte(secret.UID))
	for _, k := range slices.Sorted(maps.Keys(secret.Data)) {
		fmt.Fprintf(mac, "%s=%d:", k, len(secret.Data[k]))
		mac.Write(secret.Data[k])
	}
	return hex.EncodeToString(mac.Sum(nil))[:16]
}

func setOwner(secret *corev1.Secret, name string, uid types.UID) {
	// Not a controller reference: the operator does not manage this Secret.
	secret.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: schedv1.GroupVersion.String(), Kind: udKind.Kind, Name: name, UID: uid,
	}}
}

func (o *Options) ensureNamespace(ctx context.Context, ns string) (created bool, err error) {
	if o.DryRun == "client" {
		return false, nil
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	var opts []client.CreateOption
	if o.DryRun == "server" {
		opts = append(opts, client.DryRunAll)
	}
	err = o.Clients.Client.Create(ctx, nsObj, opts...)
	switch {
	case apierrors.IsAlreadyExists(err):
		return false, nil
	case err != nil:
		return false, cmdutil.API(err, "create", fmt.Sprintf("namespaces %q", ns))
	}
	fmt.Fprintf(o.msgOut(), "namespace/%s created%s\n", ns, cmdutil.DryRunSuffix(o.DryRun))
	return true, nil
}

func (o *Options) applyErr(ctx context.Context, err error, plural, name string) error {
	switch {
	case isNamespaceNotFound(err):
		return cmdutil.Errorf(cmdutil.ExitNotFound, "Add --create-namespace to create it, or pick another with -n.",
			"namespace %q not found", o.Clients.Namespace)
	case apierrors.IsNotFound(err):
		// Apply creates what is missing, so only the resource type can be.
		return notInstalled()
	}
	if qe := quota.Refused(ctx, o.Clients.Client, o.Clients.Namespace, err, time.Now()); qe != nil {
		return qe
	}
	return cmdutil.API(err, "patch", fmt.Sprintf("%s %q", plural, name))
}

func notInstalled() error {
	return cmdutil.API(&apimeta.NoResourceMatchError{PartialResource: udKind.GVR()}, "patch", udKind.Plural)
}

func isNamespaceNotFound(err error) bool {
	var se apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// printResult prints the object with -o, or kubectl's one line per object.
// A Secret's content is never printed: with -o json|yaml it is left out and
// stderr says so.
func (o *Options) printResult(ud *schedv1.UserDeployment, secret *corev1.Secret) error {
	if o.Output == "" {
		if secret != nil {
			fmt.Fprintf(o.Out, "secret/%s applied%s\n", secret.Name, cmdutil.DryRunSuffix(o.DryRun))
		}
		fmt.Fprintf(o.Out, "%s/%s applied%s\n", udKind.Qualified(), ud.Name, cmdutil.DryRunSuffix(o.DryRun))
		return nil
	}
	p, err := o.print.ToPrinter()
	if err != nil {
		return err
	}
	p = printing.SafePrinter(p)
	if secret != nil {
		if o.Output == "name" {
			if err := p.PrintObj(secret, o.Out); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(o.ErrOut, "note: Secret %q (keys %s) is not printed: it holds secret values.\n", secret.Name, strings.Join(sortedKeys(secret.Data), ", "))
		}
	}
	return p.PrintObj(ud, o.Out)
}

func sortedKeys(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }
