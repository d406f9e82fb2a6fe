package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/agenttask"
	"github.com/kubectl-sched/kubectl-sched/operator/cronworkflow"
	"github.com/kubectl-sched/kubectl-sched/operator/fairness"
	"github.com/kubectl-sched/kubectl-sched/operator/placement"
	"github.com/kubectl-sched/kubectl-sched/operator/podstatus"
	"github.com/kubectl-sched/kubectl-sched/operator/schedext"
	"github.com/kubectl-sched/kubectl-sched/operator/scope"
	"github.com/kubectl-sched/kubectl-sched/operator/userdeployment"
	"github.com/kubectl-sched/kubectl-sched/operator/workflow"
)

// Scheme knows the built-in kinds and ours.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(schedv1.AddToScheme(s))
	return s
}

// managedSelector selects the objects the operator created. Caching only
// those keeps memory flat in a cluster full of unrelated objects; only the
// operator may set the label (config/policy/reserved_labels.yaml), so
// nobody else's objects are cached by it.
var managedSelector = labels.SelectorFromSet(labels.Set{schedv1.LabelManagedBy: schedv1.ManagedByValue})

// revisionSelector selects the ControllerRevisions that record apps'
// revisions: the operator's, with a revision hash. The StatefulSet
// controller's revisions of an app's StatefulSets copy the pods' labels,
// managed-by included, but never carry the hash.
var revisionSelector = func() labels.Selector {
	hash, err := labels.NewRequirement(schedv1.LabelRevisionHash, selection.Exists, nil)
	utilruntime.Must(err)
	return managedSelector.Add(*hash)
}()

// owned caches what the operator made of a kind an app is made of, each
// object trimmed to what the UserDeployment controller reads of it.
func owned(gvk schema.GroupVersionKind) cache.ByObject {
	return cache.ByObject{Label: managedSelector, Transform: userdeployment.TrimOwned(gvk)}
}

// NewManager builds the manager with health checks, metrics, leader
// election and every controller.
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cfg = requestBudget(cfg, o)
	// How long requests wait for --kube-api-qps: controller-runtime serves
	// client-go's histogram only when asked.
	ctrlmetrics.RegisterRESTClientMetrics(ctrlmetrics.MetricRateLimiterLatency)
	// With a namespace selector, namespaced kinds are cached per namespace
	// served (operator/scope), following the selection as it changes.
	var newCache cache.NewCacheFunc
	if sel, _ := o.NamespaceSelector(); sel != nil {
		newCache = scope.NewCache(scope.Options{Selector: sel, Always: o.alwaysServed()})
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache:                newCache,
		Scheme:                  Scheme(),
		Metrics:                 metricsOptions(o),
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// Release the Lease on shutdown so a new replica takes over at once.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
		// Explicit, not controller-runtime's 30s default: the pod's grace
		// period (config/manager) is set to outlast it and the release.
		GracefulShutdownTimeout: &o.GracefulShutdownTimeout,
		// The name check guards against two controllers in one manager
		// sharing metrics; tests start several managers in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cacheOptions(o),
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := addChecks(mgr); err != nil {
		return nil, err
	}
	// The nodes by the CPU scheduler they run, which several controllers read.
	if err := placement.IndexNodes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("index nodes by CPU scheduler: %w", err)
	}
	if err := setupControllers(mgr, o); err != nil {
		return nil, err
	}
	return mgr, nil
}

// requestBudget is cfg with the operator's request budget: --kube-api-qps
// and burst, per kind, and with namespace fairness its tokens handed out
// in turns across namespaces while requests wait, client-go's own limiter
// off.
func requestBudget(cfg *rest.Config, o Options) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(o.Settings.KubeAPIQPS), o.Settings.KubeAPIBurst
	if o.Settings.NamespaceFairness {
		cfg.Wrap(fairness.NewBudget(o.Settings.KubeAPIQPS, o.Settings.KubeAPIBurst).Wrap)
		cfg.QPS = -1
	}
	return cfg
}

// cacheOptions say what the manager's cache holds of each kind: what the
// operator made, each trimmed to what its controllers read.
func cacheOptions(o Options) cache.Options {
	sync := o.SyncPeriod
	apps, core, networking := appsv1.SchemeGroupVersion, corev1.SchemeGroupVersion, networkingv1.SchemeGroupVersion
	return cache.Options{
		SyncPeriod:       &sync,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}:  owned(apps.WithKind("Deployment")),
			&appsv1.StatefulSet{}: owned(apps.WithKind("StatefulSet")),
			// Only in the scheduler namespace, where its Role is. Kept
			// whole: one per SchedExt, and updated from the cached copy.
			&appsv1.DaemonSet{}: {Label: managedSelector, Namespaces: map[string]cache.Config{o.Settings.SchedulerNamespace: {}}},
			&corev1.Service{}:   owned(core.WithKind("Service")),
			// The tiers ConfigMap, which the install writes, is kept whole.
			&corev1.ConfigMap{}: owned(core.WithKind("ConfigMap")),
			// Never read (the operator has no RBAC for Secrets); listed so a
			// future read cannot cache every Secret in the cluster.
			&corev1.Secret{}: {Label: managedSelector},
			// The tasks' Jobs, without their pod templates (agenttask.TrimJob).
			&batchv1.Job{}: {Label: managedSelector, Transform: agenttask.TrimJob},
			// The apps' revisions, without their data (userdeployment.TrimRevision).
			&appsv1.ControllerRevision{}: {Label: revisionSelector, Transform: userdeployment.TrimRevision},
			// The apps with the managed fields of their specs, which say
			// who changed what (userdeployment.TrimApp).
			&schedv1.UserDeployment{}: {Transform: userdeployment.TrimApp},
			// Tasks without what only their Jobs read, workflows and cron
			// workflows without a large spec (agenttask.TrimTask,
			// workflow.TrimWorkflow, cronworkflow.TrimCron), and the
			// three kinds' metadata trimmed (cachetrim.TrimMeta).
			&schedv1.AgentTask{}:          {Transform: agenttask.TrimTask},
			&schedv1.Workflow{}:           {Transform: workflow.TrimWorkflow},
			&schedv1.CronWorkflow{}:       {Transform: cronworkflow.TrimCron},
			&networkingv1.Ingress{}:       owned(networking.WithKind("Ingress")),
			&networkingv1.NetworkPolicy{}: owned(networking.WithKind("NetworkPolicy")),
			&corev1.LimitRange{}:          {Label: managedSelector},
			// Pods the operator made, trimmed to what the controllers
			// read (see podstatus.Trim): the spec is most of their size.
			&corev1.Pod{}: {Label: managedSelector, Transform: podstatus.Trim},
			// Every node, for SchedExt arbitration, trimmed to metadata
			// and spec: the status is most of a node's size.
			&corev1.Node{}: {Transform: schedext.TrimNode},
			// Only the Job controller's reports that it cannot create a
			// pod, which explain a stuck AgentTask; no label can narrow
			// them further, so each is trimmed (agenttask.TrimEvent).
			&corev1.Event{}: {
				Field:     fields.SelectorFromSet(fields.Set{"involvedObject.kind": "Job", "reason": "FailedCreate"}),
				Transform: agenttask.TrimEvent,
			},
			// Every autoscaler: users make them for the apps' workloads
			// without the operator's labels, so no selector can pick
			// them. Each keeps only its scale target (userdeployment.TrimHPA).
			&autoscalingv2.HorizontalPodAutoscaler{}: {Transform: userdeployment.TrimHPA},
		},
	}
}

// addChecks adds the health check, and the readiness check: ready once the
// caches have synced, before which a reconcile would act on a partial
// view.
func addChecks(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("caches not synced")
		}
		return nil
	})
}

// metricsOptions serves metrics over HTTPS behind the API server's
// authentication and authorization when MetricsSecure is set, with a
// self-signed certificate (in memory) and HTTP/1.1 only unless EnableHTTP2.
func metricsOptions(o Options) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.MetricsAddr, SecureServing: o.MetricsSecure}
	if !o.EnableHTTP2 {
		opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	if o.MetricsSecure {
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return opts
}
