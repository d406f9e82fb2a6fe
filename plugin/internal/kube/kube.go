// Package kube builds the clients a command needs from the kubectl flags
// (--kubeconfig, --context, -n, --as, ...), and applies objects with
// server-side apply as field manager kubectl-sched. Every command's options
// embed its ClientOptions, which also complete object names.
package kube

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// FieldManager owns the fields kubectl sched applies.
const FieldManager = "kubectl-sched"

// Scheme knows the built-in kinds and ours.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(schedv1.AddToScheme(s))
	return s
}()

// Clients are what commands talk to the cluster with.
type Clients struct {
	Config *rest.Config
	Client client.WithWatch
	Kube   kubernetes.Interface
	// Dynamic and Metadata reach any resource, for install's manifests and
	// the lists that need only names and labels.
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Namespace string
	// ExplicitNamespace is true when -n was given (or the context sets one).
	ExplicitNamespace bool
}

// Getter builds Clients; tests swap it to point commands at a test server.
type Getter func(flags *genericclioptions.ConfigFlags) (*Clients, error)

// New is the Getter commands use.
func New(flags *genericclioptions.ConfigFlags) (*Clients, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot load the kubeconfig: %w", err)
	}
	// client-go's default of 5 requests a second made install (two
	// requests for each of its ~40 objects) take 18 s. The API server's
	// priority and fairness, not the client, is what protects it.
	cfg.QPS, cfg.Burst = 50, 100
	ns, explicit, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("cannot read the namespace from the kubeconfig: %w", err)
	}
	return forConfig(cfg, ns, explicit)
}

func forConfig(cfg *rest.Config, ns string, explicit bool) (*Clients, error) {
	// The mapper is fixed to our scheme's kinds, so commands do not pay for
	// discovery of every API in the cluster (kubectl's largest startup cost).
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: Scheme, Mapper: restMapper()})
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Config: cfg, Client: c, Kube: kc, Dynamic: dc, Metadata: mc, Namespace: ns, ExplicitNamespace: explicit}, nil
}

// WithTimeout is c with each request bounded by d, whatever
// --request-timeout says: for the quick asks (version, completion) that
// must not hang on a cluster that does not answer. Clients not built from
// a config (a test's) are returned as they are.
func (c *Clients) WithTimeout(d time.Duration) (*Clients, error) {
	if c.Config == nil {
		return c, nil
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Timeout = d
	return forConfig(cfg, c.Namespace, c.ExplicitNamespace)
}

// Create creates obj as field manager kubectl-sched, or only has the API
// server check it with dryRun "server"; "client" sends nothing. Unlike
// Apply it fails with AlreadyExists rather than change an object that is
// there, so two runs of one name cannot race into one.
func (c *Clients) Create(ctx context.Context, obj client.Object, dryRun string) error {
	if dryRun == "client" {
		return nil
	}
	opts := []client.CreateOption{client.FieldOwner(FieldManager)}
	if dryRun == "server" {
		opts = append(opts, client.DryRunAll)
	}
	return retryQuotaConflict(func() error { return c.Client.Create(ctx, obj, opts...) })
}

// Apply server-side applies obj as kubectl-sched; dryRun is "", "client" or
// "server". With "client" nothing is sent.
func (c *Clients) Apply(ctx context.Context, obj client.Object, dryRun string) error {
	if dryRun == "client" {
		return nil
	}
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	u.SetManagedFields(nil)
	u.SetResourceVersion("")
	err = retryQuotaConflict(func() error {
		return c.Client.Patch(ctx, u, client.Apply, PatchOptions(dryRun, client.ForceOwnership)...)
	})
	if err != nil {
		return err
	}
	if _, same := obj.(*unstructured.Unstructured); same {
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}

// MergePatch sends patch to obj as kubectl-sched, as dryRun says: "client"
// sends nothing, "server" has the API server check it without making it.
func (c *Clients) MergePatch(ctx context.Context, obj client.Object, patch []byte, dryRun string) error {
	if dryRun == "client" {
		return nil
	}
	return c.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), PatchOptions(dryRun)...)
}

// PatchOptions are a patch's options as field manager kubectl-sched, with
// more; dryRun "server" has the API server check the patch without making
// it.
func PatchOptions(dryRun string, more ...client.PatchOption) []client.PatchOption {
	opts := append([]client.PatchOption{client.FieldOwner(FieldManager)}, more...)
	if dryRun == "server" {
		opts = append(opts, client.DryRunAll)
	}
	return opts
}
