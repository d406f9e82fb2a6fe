// Package app builds the operator's manager from its options. main.go and
// the tests both use it, so the test runs what ships.
package app

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-sched/kubectl-sched/api/secretstore"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Options configure the manager and the controllers. Every option is a flag;
// the ones a deployment sets per cluster can also come from the environment
// (the variable named in the flag's help), which wins over the default but
// not over a flag given on the command line.
type Options struct {
	Version string

	MetricsAddr string
	// MetricsSecure serves metrics over HTTPS to callers the API server
	// authenticates and authorizes (get on the /metrics URL).
	MetricsSecure bool
	// EnableHTTP2 on the metrics server; off by default against the HTTP/2
	// rapid reset and stream cancellation attacks.
	EnableHTTP2             bool
	ProbeAddr               string
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	MaxConcurrentReconciles int
	// KubeAPIQPS and KubeAPIBurst limit the operator's requests to the API
	// server; a busy cluster with many tasks needs more than client-go's 5/10.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// SyncPeriod is how often every cached object is reconciled again, as a
	// safety net; controllers never rely on it.
	SyncPeriod time.Duration
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	// A killed leader cannot release its Lease, so a standby takes over
	// after LeaseDuration plus up to RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// GracefulShutdownTimeout is how long the manager waits, once asked to
	// stop, for reconciles in flight; then it releases the Lease, which
	// takes up to RenewDeadline more. The pod's terminationGracePeriodSeconds
	// (config/manager) must outlast both, or the kubelet kills the process
	// first and a standby waits out LeaseDuration.
	GracefulShutdownTimeout time.Duration
	// Controllers to run, by name; all when empty.
	Controllers []string

	Settings Settings
}

// Settings are what the controllers need to know about the cluster.
type Settings struct {
	// IngressDomain is the domain public services get hosts under:
	// <name>.<namespace>.<domain>.
	IngressDomain string
	// IngressProvider is "ingress" (networking.k8s.io/v1) or "traefik"
	// (an IngressRoute, when that API is served).
	IngressProvider string
	// IngressClass is the default ingressClassName.
	IngressClass string
	// AllowedIngressClasses are the classes besides IngressClass that an
	// app may name in spec.ingress.className; none when empty.
	AllowedIngressClasses []string
	// IngressNamespace runs the ingress controller; NetworkPolicies admit it.
	IngressNamespace string
	// NetworkPolicies switches NetworkPolicy isolation on (off for development
	// clusters): apps' policies and tenant namespaces' default deny.
	NetworkPolicies bool
	// MonitoringNamespace runs the cluster's Prometheus: tenant namespaces
	// admit it, and apps on the metrics ports their allowFrom names.
	MonitoringNamespace string
	// ClusterSecretStore is the External Secrets store for external references.
	ClusterSecretStore string
	// ExternalSecretKeyTemplate confines each namespace's external secret
	// keys to a prefix of the shared store; {{namespace}} is replaced.
	ExternalSecretKeyTemplate string
	// ExternalSecretReservedPaths are top-level paths of the shared store no
	// namespace's prefix may cover: its mount, which External Secrets
	// strips from a key that starts with it (so a namespace named like the
	// mount would reach every key), and folders of shared secrets.
	ExternalSecretReservedPaths []string
	// SchedulerNamespace holds the SchedExt DaemonSets.
	SchedulerNamespace string
	// SchedulerImages maps well-known scheduler names (scx_lavd) to images.
	SchedulerImages map[string]string
	// HelperImage runs the SchedExt pods' kernel preflight and attach check;
	// it needs only sh and cat, so scheduler images need no shell.
	HelperImage string
	// PriorityClasses maps placement priorities (Critical) to PriorityClass names.
	PriorityClasses map[string]string
	// AllowedSchedulerRegistries limit the images a SchedExt names itself
	// (spec.scheduler.image) to these registries or repositories; any
	// when empty. Images of --scheduler-image are the admin's own.
	AllowedSchedulerRegistries []string
	// ClusterIssuer is the cert-manager ClusterIssuer that signs public
	// apps' certificates when cert-manager is installed; none when empty.
	ClusterIssuer string
}

// DefaultOptions returns the options a deployment starts from.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:             ":8443",
		MetricsSecure:           true,
		ProbeAddr:               ":8081",
		LeaderElectionID:        "kubectl-sched-operator.sched.kubectl-sched.dev",
		MaxConcurrentReconciles: 10,
		KubeAPIQPS:              50,
		KubeAPIBurst:            100,
		SyncPeriod:              10 * time.Hour,
		// client-go's and kube-controller-manager's defaults.
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		// Reconciles are a few API calls each; 15s leaves the Lease's
		// release (up to RenewDeadline) inside the pod's 30s grace period.
		GracefulShutdownTimeout: 15 * time.Second,
		Settings: Settings{
			IngressDomain:    "apps.example.com",
			IngressProvider:  "ingress",
			IngressNamespace: "ingress-nginx",
			// kube-prometheus-stack's usual namespace.
			MonitoringNamespace: "monitoring",
			NetworkPolicies:     true,
			// One shared store, so each namespace reads only its own keys.
			ExternalSecretKeyTemplate: "{{namespace}}/",
			// Vault's default KV mount.
			ExternalSecretReservedPaths: []string{"secret"},
			SchedulerNamespace:          schedv1.DefaultSchedulerNamespace,
			SchedulerImages:             DefaultSchedulerImages(),
			HelperImage:                 "busybox:1.37",
			PriorityClasses:             map[string]string{},
		},
	}
}

// SchedulerImage is the default image of the well-known scx schedulers: one
// image with every scheduler of a released scx version, pinned so that a
// node never runs a scheduler nobody chose. --scheduler-image overrides it
// per scheduler, and a SchedExt's scheduler.image per SchedExt.
const SchedulerImage = "ghcr.io/sched-ext/scx:" + SchedulerVersion

// SchedulerVersion is the scx release SchedulerImage holds.
const SchedulerVersion = "v1.0.14"

// DefaultSchedulerImages resolves the well-known scx schedulers.
func DefaultSchedulerImages() map[string]string {
	images := map[string]string{}
	for _, s := range schedv1.WellKnownSchedulers {
		images[s] = SchedulerImage
	}
	return images
}

// BindFlags registers the options on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "Serve metrics over HTTPS, only to callers allowed to get the /metrics URL (TokenReview and SubjectAccessReview); false serves plain HTTP to anyone.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2, "Allow HTTP/2 on the metrics server (off: HTTP/1.1 only, against HTTP/2 stream attacks).")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address /healthz and /readyz bind to.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Take a Lease so only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader Lease; the pod's namespace when empty. (env POD_NAMESPACE)")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a standby waits before taking the Lease of a leader that stopped renewing it (a crashed leader): the bound on failover.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader keeps trying to renew before it gives up leading; less than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often replicas try to take or renew the Lease.")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout, "How long a stopping operator waits for reconciles in flight before it releases the Lease; the pod's terminationGracePeriodSeconds must exceed it plus --leader-elect-renew-deadline.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "Reconciles that run at once per kind. (env MAX_CONCURRENT_RECONCILES)")
	fs.Func("kube-api-qps", "Requests per second to the API server. (default 50)", func(v string) error {
		f, err := strconv.ParseFloat(v, 32)
		if err != nil || f <= 0 {
			return fmt.Errorf("%q is not a positive number", v)
		}
		o.KubeAPIQPS = float32(f)
		return nil
	})
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of requests to the API server.")
	fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod, "How often every object is reconciled again as a safety net.")
	fs.Func("controllers", "Comma-separated controllers to run (agenttask, workflow, userdeployment, schedext); all when unset.", func(v string) error {
		o.Controllers = strings.Split(v, ",")
		return nil
	})
	s := &o.Settings
	fs.StringVar(&s.IngressDomain, "ingress-domain", s.IngressDomain, "Domain of public hosts: <name>.<namespace>.<domain>. (env INGRESS_DOMAIN, or DEPLOYMENT_DOMAIN)")
	fs.StringVar(&s.IngressProvider, "ingress-provider", s.IngressProvider, "ingress (networking.k8s.io/v1 Ingress) or traefik (IngressRoute when served). (env INGRESS_PROVIDER)")
	fs.StringVar(&s.IngressClass, "ingress-class", s.IngressClass, "Default ingressClassName. (env INGRESS_CLASS)")
	fs.Func("allowed-ingress-classes", "Comma-separated ingress classes an app may name in spec.ingress.className besides --ingress-class; none when empty. (env ALLOWED_INGRESS_CLASSES)", func(v string) error {
		s.AllowedIngressClasses = splitList(v)
		return nil
	})
	fs.StringVar(&s.IngressNamespace, "ingress-namespace", s.IngressNamespace, "Namespace of the ingress controller, admitted by NetworkPolicies. (env INGRESS_NAMESPACE)")
	fs.StringVar(&s.MonitoringNamespace, "monitoring-namespace", s.MonitoringNamespace, "Namespace of the cluster's Prometheus, admitted by tenant namespaces and on apps' allowFrom.metricsPorts. (env MONITORING_NAMESPACE)")
	fs.BoolVar(&s.NetworkPolicies, "network-policies", s.NetworkPolicies, "Isolate apps and tenant namespaces with NetworkPolicies; turn off on development clusters. (env NETWORK_POLICIES, or DISABLE_NETWORK_POLICIES=true)")
	fs.StringVar(&s.ClusterSecretStore, "cluster-secret-store", s.ClusterSecretStore, "External Secrets ClusterSecretStore for external secret references. (env CLUSTER_SECRET_STORE)")
	fs.StringVar(&s.ExternalSecretKeyTemplate, "external-secret-key-template", s.ExternalSecretKeyTemplate, "Prefix every external secret key of an app must start with; {{namespace}} is the app's namespace; empty allows any key. (env EXTERNAL_SECRET_KEY_TEMPLATE)")
	fs.Func("external-secret-reserved-paths", "Comma-separated top-level paths of the ClusterSecretStore that no namespace's key prefix may cover: its mount (Vault's path; External Secrets strips it from keys that start with it) and folders of shared secrets. (env EXTERNAL_SECRET_RESERVED_PATHS; default secret)", func(v string) error {
		s.ExternalSecretReservedPaths = secretstore.ParsePaths(v)
		return nil
	})
	fs.StringVar(&s.SchedulerNamespace, "scheduler-namespace", s.SchedulerNamespace, "Namespace of the SchedExt DaemonSets. (env SCHEDULER_NAMESPACE)")
	fs.StringVar(&s.HelperImage, "helper-image", s.HelperImage, "Image with sh and cat for the SchedExt pods' kernel preflight and attach check. (env HELPER_IMAGE)")
	fs.Var(mapFlag(s.SchedulerImages), "scheduler-image", "NAME=IMAGE resolving a well-known scheduler; repeatable. (env SCHEDULER_IMAGES, comma-separated)")
	fs.Var(mapFlag(s.PriorityClasses), "priority-class", "PRIORITY=CLASS mapping a placement priority to a PriorityClass; repeatable. (env PRIORITY_CLASSES)")
	fs.Func("allowed-scheduler-registries", "Comma-separated registries or repositories (ghcr.io/sched-ext,registry.example.com) a SchedExt's own scheduler.image must come from; any when empty. (env ALLOWED_SCHEDULER_REGISTRIES)", func(v string) error {
		s.AllowedSchedulerRegistries = splitList(v)
		return nil
	})
	fs.StringVar(&s.ClusterIssuer, "cluster-issuer", s.ClusterIssuer, "cert-manager ClusterIssuer for public apps' certificates, used when cert-manager is installed. (env CLUSTER_ISSUER)")
}

// ApplyEnv fills options from the environment where fs (parsed) had no flag,
// then validates them.
func (o *Options) ApplyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	str := func(flagName, env string, dst *string) {
		if v, ok := lookup(env); ok && !given[flagName] {
			*dst = v
		}
	}
	s := &o.Settings
	str("leader-election-namespace", "POD_NAMESPACE", &o.LeaderElectionNamespace)
	// The seed's names, read first so that ours win when both are set.
	str("ingress-domain", "DEPLOYMENT_DOMAIN", &s.IngressDomain)
	if v, ok := lookup("DISABLE_NETWORK_POLICIES"); ok && !given["network-policies"] {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("DISABLE_NETWORK_POLICIES=%q is not true or false", v)
		}
		s.NetworkPolicies = !b
	}
	str("ingress-domain", "INGRESS_DOMAIN", &s.IngressDomain)
	str("monitoring-namespace", "MONITORING_NAMESPACE", &s.MonitoringNamespace)
	str("ingress-provider", "INGRESS_PROVIDER", &s.IngressProvider)
	str("ingress-class", "INGRESS_CLASS", &s.IngressClass)
	str("ingress-namespace", "INGRESS_NAMESPACE", &s.IngressNamespace)
	str("cluster-secret-store", "CLUSTER_SECRET_STORE", &s.ClusterSecretStore)
	str("external-secret-key-template", "EXTERNAL_SECRET_KEY_TEMPLATE", &s.ExternalSecretKeyTemplate)
	str("scheduler-namespace", "SCHEDULER_NAMESPACE", &s.SchedulerNamespace)
	str("helper-image", "HELPER_IMAGE", &s.HelperImage)
	str("cluster-issuer", "CLUSTER_ISSUER", &s.ClusterIssuer)
	if v, ok := lookup("EXTERNAL_SECRET_RESERVED_PATHS"); ok && !given["external-secret-reserved-paths"] {
		s.ExternalSecretReservedPaths = secretstore.ParsePaths(v)
	}
	if v, ok := lookup("ALLOWED_SCHEDULER_REGISTRIES"); ok && !given["allowed-scheduler-registries"] {
		s.AllowedSchedulerRegistries = splitList(v)
	}
	if v, ok := lookup("ALLOWED_INGRESS_CLASSES"); ok && !given["allowed-ingress-classes"] {
		s.AllowedIngressClasses = splitList(v)
	}
	if v, ok := lookup("MAX_CONCURRENT_RECONCILES"); ok && !given["max-concurrent-reconciles"] {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("MAX_CONCURRENT_RECONCILES=%q is not a whole number", v)
		}
		o.MaxConcurrentReconciles = n
	}
	if v, ok := lookup("NETWORK_POLICIES"); ok && !given["network-policies"] {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("NETWORK_POLICIES=%q is not true or false", v)
		}
		s.NetworkPolicies = b
	}
	for flagName, env := range map[string]string{"scheduler-image": "SCHEDULER_IMAGES", "priority-class": "PRIORITY_CLASSES"} {
		v, ok := lookup(env)
		if !ok || given[flagName] || v == "" {
			continue
		}
		dst := s.SchedulerImages
		if flagName == "priority-class" {
			dst = s.PriorityClasses
		}
		for _, kv := range strings.Split(v, ",") {
			if err := mapFlag(dst).Set(strings.TrimSpace(kv)); err != nil {
				return fmt.Errorf("%s: %w", env, err)
			}
		}
	}
	return o.Validate()
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	if o.MaxConcurrentReconciles < 1 {
		return fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", o.MaxConcurrentReconciles)
	}
	if !(o.RetryPeriod > 0 && o.RetryPeriod < o.RenewDeadline && o.RenewDeadline < o.LeaseDuration) {
		return fmt.Errorf("leader election needs 0 < --leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration, got %v, %v, %v", o.RetryPeriod, o.RenewDeadline, o.LeaseDuration)
	}
	if o.GracefulShutdownTimeout <= 0 {
		return fmt.Errorf("--graceful-shutdown-timeout must be positive, got %v", o.GracefulShutdownTimeout)
	}
	switch o.Settings.IngressProvider {
	case "ingress", "traefik":
	default:
		return fmt.Errorf("--ingress-provider must be ingress or traefik, got %q", o.Settings.IngressProvider)
	}
	for _, c := range o.Settings.AllowedIngressClasses {
		if errs := validation.IsDNS1123Subdomain(c); len(errs) > 0 {
			return fmt.Errorf("--allowed-ingress-classes: %q is not an IngressClass name (a lower-case DNS name)", c)
		}
	}
	if msg := secretstore.TemplateProblem(o.Settings.ExternalSecretKeyTemplate); msg != "" {
		return fmt.Errorf("--external-secret-key-template %q %s", o.Settings.ExternalSecretKeyTemplate, msg)
	}
	if o.Settings.SchedulerNamespace == "" {
		return fmt.Errorf("--scheduler-namespace must not be empty")
	}
	if o.Settings.HelperImage == "" {
		return fmt.Errorf("--helper-image must not be empty")
	}
	for _, r := range o.Settings.AllowedSchedulerRegistries {
		if strings.Contains(r, "://") {
			return fmt.Errorf("--allowed-scheduler-registries: %q: give a registry host or repository (ghcr.io/sched-ext), not a URL", r)
		}
	}
	for p := range o.Settings.PriorityClasses {
		if !slices.Contains(schedv1.Priorities, schedv1.Priority(p)) {
			return fmt.Errorf("--priority-class %s=...: %q is not a placement priority (one of %v)", p, p, schedv1.Priorities)
		}
	}
	return nil
}

// splitList reads a comma-separated list, without empty items.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// mapFlag is a repeatable KEY=VALUE flag.
type mapFlag map[string]string

func (m mapFlag) String() string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (m mapFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("%q is not KEY=VALUE", s)
	}
	m[k] = v
	return nil
}
