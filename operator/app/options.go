// Package app builds the operator's manager from its options. main.go and
// the tests both use it, so the test runs what ships.
package app

import (
	"cmp"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"github.com/kubectl-sched/kubectl-sched/api/secretstore"
	"github.com/kubectl-sched/kubectl-sched/api/settings"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/taskjob"
)

// Options configure the manager and the controllers. Every option but Clock is a flag;
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
	EnableHTTP2 bool
	ProbeAddr   string
	// PprofAddr serves Go's profiles (net/http/pprof) without
	// authentication, for a benchmark or a debugging session on a loopback
	// address; empty or "0", the default, serves none.
	PprofAddr               string
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
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

	// WebhookCertDir holds tls.crt and tls.key for the accounts webhook
	// (operator/accounts), reloaded when they change; empty serves no
	// webhook. WebhookHost and WebhookPort are where it listens.
	WebhookCertDir string
	WebhookHost    string
	WebhookPort    int

	// Settings are the cluster settings (api/settings), each a flag and an
	// environment variable.
	Settings settings.Values
	// OperatorImage is the operator's own image (OPERATOR_IMAGE), the
	// tools image when Settings.ToolsImage is empty.
	OperatorImage string

	// Clock is what the CronWorkflow controller reads the time from; the
	// real clock when nil. Not a flag: tests set a fake one, so a run
	// falls due when they say.
	Clock clock.PassiveClock

	// jobs creates tasks' Jobs for the AgentTask and Workflow controllers,
	// which share it (setupControllers makes it); not an option.
	jobs *taskjob.Starter
}

// DefaultOptions returns the options a deployment starts from.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:      ":8443",
		MetricsSecure:    true,
		ProbeAddr:        ":8081",
		WebhookPort:      9443,
		LeaderElectionID: "kubectl-sched-operator.sched.kubectl-sched.dev",
		SyncPeriod:       10 * time.Hour,
		// client-go's and kube-controller-manager's defaults.
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		// Reconciles are a few API calls each; 15s leaves the Lease's
		// release (up to RenewDeadline) inside the pod's 30s grace period.
		GracefulShutdownTimeout: 15 * time.Second,
		Settings: settings.Values{
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
			// The project's own (the simulated cluster's sim.kubectl-sched.dev).
			AllowedPodAnnotationDomains: []string{"kubectl-sched.dev"},
			SchedulerNamespace:          schedv1.DefaultSchedulerNamespace,
			SchedulerImages:             DefaultSchedulerImages(),
			HelperImage:                 "busybox:1.37",
			PriorityClasses:             map[string]string{},
			// A week of history, then finished runs go (tiers say less).
			DefaultTTL: 7 * 24 * time.Hour,
			// Long enough to read a fresh log; the outputs are in the status.
			SucceededPodRetention: 10 * time.Minute,
			// A busy cluster with many tasks needs more than client-go's 5/10.
			KubeAPIQPS:              50,
			KubeAPIBurst:            100,
			MaxConcurrentReconciles: 10,
			ControllerWorkers:       map[string]string{},
			NamespaceFairness:       true,
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
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, "Address Go's profiles (/debug/pprof/) bind to, unauthenticated: keep it on loopback; empty or 0 serves none.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Take a Lease so only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader Lease; the pod's namespace when empty. (env POD_NAMESPACE)")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a standby waits before taking the Lease of a leader that stopped renewing it (a crashed leader): the bound on failover.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader keeps trying to renew before it gives up leading; less than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often replicas try to take or renew the Lease.")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout, "How long a stopping operator waits for reconciles in flight before it releases the Lease; the pod's terminationGracePeriodSeconds must exceed it plus --leader-elect-renew-deadline.")
	fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod, "How often every object is reconciled again as a safety net.")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir, "Folder holding tls.crt and tls.key of the service-accounts webhook (reloaded when they change); empty serves no webhook.")
	fs.StringVar(&o.WebhookHost, "webhook-host", o.WebhookHost, "Address the service-accounts webhook binds to; all when empty.")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "Port the service-accounts webhook serves on.")
	fs.Func("controllers", "Comma-separated controllers to run (agenttask, workflow, cronworkflow, userdeployment, schedext, tenant); all when unset.", func(v string) error {
		o.Controllers = strings.Split(v, ",")
		return nil
	})
	for _, st := range settings.All {
		switch p := st.Field(&o.Settings).(type) {
		case *string:
			fs.StringVar(p, st.Flag, *p, usage(st, p))
		case *bool:
			fs.BoolVar(p, st.Flag, *p, usage(st, p))
		case *[]string:
			fs.Func(st.Flag, usage(st, p), func(v string) error {
				*p = st.Split(v)
				return nil
			})
		case map[string]string:
			fs.Var(mapFlag(p), st.Flag, usage(st, p))
		case *int:
			fs.IntVar(p, st.Flag, *p, usage(st, p))
		case *float64:
			fs.Float64Var(p, st.Flag, *p, usage(st, p))
		case *time.Duration:
			fs.DurationVar(p, st.Flag, *p, usage(st, p))
		}
	}
}

// usage is a setting's flag help: its text, then the variables it may come
// from, and a list's default, which a flag.Func does not show.
func usage(st settings.Setting, value any) string {
	env := st.Env
	if st.Seed != "" {
		env += ", or " + st.Seed
		if st.SeedNegates {
			env += "=true"
		}
	}
	if l, ok := value.(*[]string); ok && len(*l) > 0 {
		env += "; default " + strings.Join(*l, ",")
	}
	return fmt.Sprintf("%s (env %s%s)", st.Help, env, st.EnvNote)
}

// ApplyEnv fills options from the environment where fs (parsed) had no flag,
// then validates them.
func (o *Options) ApplyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	// Install gives the operator's Deployment its own image: the default
	// tools image.
	o.OperatorImage, _ = lookup("OPERATOR_IMAGE")
	if v, ok := lookup("POD_NAMESPACE"); ok && !given["leader-election-namespace"] {
		o.LeaderElectionNamespace = v
	}
	for _, st := range settings.All {
		if given[st.Flag] {
			continue
		}
		// The seed's name first, so that ours wins when both are set.
		for _, name := range []string{st.Seed, st.Env} {
			if name == "" {
				continue
			}
			v, ok := lookup(name)
			if !ok {
				continue
			}
			if err := setFromEnv(st, &o.Settings, name, v, name == st.Seed && st.SeedNegates); err != nil {
				return err
			}
		}
	}
	return o.Validate()
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	if o.Settings.MaxConcurrentReconciles < 1 {
		return fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", o.Settings.MaxConcurrentReconciles)
	}
	for name, n := range o.Settings.ControllerWorkers {
		if !slices.Contains(settings.Controllers, name) {
			return fmt.Errorf("--controller-workers %s=%s: %q is not a controller (%s)", name, n, name, strings.Join(settings.Controllers, ", "))
		}
		if w, err := strconv.Atoi(n); err != nil || w < 1 {
			return fmt.Errorf("--controller-workers %s=%s: give a whole number of workers of 1 or more", name, n)
		}
	}
	if o.Settings.KubeAPIQPS <= 0 || o.Settings.KubeAPIBurst < 1 {
		return fmt.Errorf("--kube-api-qps and --kube-api-burst must be above 0, got %v and %d", o.Settings.KubeAPIQPS, o.Settings.KubeAPIBurst)
	}
	if o.Settings.DefaultTTL < 0 || o.Settings.SucceededPodRetention < 0 {
		return fmt.Errorf("--default-ttl and --succeeded-pod-retention must be 0 or more, got %v and %v", o.Settings.DefaultTTL, o.Settings.SucceededPodRetention)
	}
	if _, err := o.NamespaceSelector(); err != nil {
		return err
	}
	if o.RetryPeriod <= 0 || o.RetryPeriod >= o.RenewDeadline || o.RenewDeadline >= o.LeaseDuration {
		return fmt.Errorf("leader election needs 0 < --leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration, got %v, %v, %v", o.RetryPeriod, o.RenewDeadline, o.LeaseDuration)
	}
	if o.WebhookCertDir != "" && (o.WebhookPort < 1 || o.WebhookPort > 65535) {
		return fmt.Errorf("--webhook-port must be a port (1-65535), got %d", o.WebhookPort)
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
	for _, d := range o.Settings.AllowedPodAnnotationDomains {
		if errs := validation.IsDNS1123Subdomain(d); d != "*" && len(errs) > 0 {
			return fmt.Errorf("--allowed-pod-annotation-domains: %q is not a domain (a lower-case DNS name) or *", d)
		}
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

// Workers is how many reconciles the controller name runs at once:
// --controller-workers's, or --max-concurrent-reconciles.
func (o *Options) Workers(name string) int {
	if n, err := strconv.Atoi(o.Settings.ControllerWorkers[name]); err == nil && n > 0 {
		return n
	}
	return o.Settings.MaxConcurrentReconciles
}

// NamespaceSelector is --namespace-selector parsed; nil when every
// namespace is served.
func (o *Options) NamespaceSelector() (labels.Selector, error) {
	if strings.TrimSpace(o.Settings.NamespaceSelector) == "" {
		return nil, nil
	}
	sel, err := labels.Parse(o.Settings.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("--namespace-selector %q is not a label selector: %w", o.Settings.NamespaceSelector, err)
	}
	return sel, nil
}

// ToolsImage runs the helpers in tasks' pods: the tools-image setting,
// else the operator's own image.
func (o *Options) ToolsImage() string {
	return cmp.Or(o.Settings.ToolsImage, o.OperatorImage)
}

// serves says whether the operator serves a namespace: nil when it serves
// every one.
func (o *Options) serves() func(*corev1.Namespace) bool {
	sel, err := o.NamespaceSelector()
	if err != nil || sel == nil {
		return nil
	}
	always := o.alwaysServed()
	return func(ns *corev1.Namespace) bool {
		return slices.Contains(always, ns.Name) || sel.Matches(labels.Set(ns.Labels))
	}
}

// alwaysServed are the namespaces the operator reads whatever the
// namespace selector: its own (templates, the status Lease) and the
// scheduler namespace (the SchedExt pods).
func (o *Options) alwaysServed() []string {
	return []string{o.operatorNamespace(), o.Settings.SchedulerNamespace}
}

// operatorNamespace runs the operator: the leader Lease's namespace.
func (o *Options) operatorNamespace() string {
	if o.LeaderElectionNamespace != "" {
		return o.LeaderElectionNamespace
	}
	return schedv1.DefaultOperatorNamespace
}

// setFromEnv sets st in values from the variable name's value v; negate
// reads a Bool the other way round.
func setFromEnv(st settings.Setting, values *settings.Values, name, v string, negate bool) error {
	switch p := st.Field(values).(type) {
	case *string:
		*p = v
	case *bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s=%q is not true or false", name, v)
		}
		*p = b != negate
	case *[]string:
		*p = st.Split(v)
	case map[string]string:
		if v == "" {
			return nil
		}
		for _, kv := range strings.Split(v, ",") {
			if err := mapFlag(p).Set(strings.TrimSpace(kv)); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	case *int:
		// Empty, as the ConfigMap may hold it: the default.
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s=%q is not a whole number", name, v)
		}
		*p = n
	case *float64:
		if v == "" {
			return nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%s=%q is not a number", name, v)
		}
		*p = f
	case *time.Duration:
		if v == "" {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s=%q is not a duration (10m, 168h)", name, v)
		}
		*p = d
	}
	return nil
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
