// Package settings is the one list of the operator's cluster settings.
// The operator's flags and environment variables (operator/app), install's
// flags (plugin/cmd/install) and docs/reference/settings.md (hack/docgen)
// all come from All, so none of them can name a setting the others lack.
package settings

import (
	"time"

	"github.com/kubectl-sched/kubectl-sched/api/secretstore"
)

// Kind is how a setting's value is written.
type Kind int

const (
	// String is a value as given.
	String Kind = iota
	// Bool is true or false.
	Bool
	// List is comma-separated values.
	List
	// Map is KEY=VALUE pairs: a repeatable flag, comma-separated in the
	// environment.
	Map
	// Int is a whole number.
	Int
	// Number is a decimal number.
	Number
	// Duration is a Go duration: 10m, 168h.
	Duration
)

// Setting is one cluster setting of the operator.
type Setting struct {
	// Flag names both the operator's flag and install's, without dashes.
	Flag string
	// Env is the operator's environment variable: the key install writes
	// into the operator's ConfigMap.
	Env string
	// Seed is the seed project's name for Env, read when Env is not set;
	// SeedNegates says it means the opposite (DISABLE_NETWORK_POLICIES).
	Seed        string
	SeedNegates bool
	Kind        Kind
	// Metavar names a Map setting's pairs in the docs (PRIORITY=CLASS).
	Metavar string
	// Field is where the operator keeps the value: a *string, *bool,
	// *[]string, map[string]string, *int, *float64 or *time.Duration in v,
	// by Kind.
	Field func(v *Values) any
	// Split reads a List.
	Split func(string) []string
	// Check says what is wrong with a value given to install (for a Map,
	// one KEY and VALUE), "" when nothing is; nil accepts any. The
	// operator validates its options itself (operator/app).
	Check func(key, value string) string

	// Help is the operator flag's help; EnvNote follows the variable's
	// name at its end. InstallHelp is install's flag's help.
	Help, EnvNote, InstallHelp string
	// Default and Doc are the columns "default" and "what it does" of
	// docs/reference/settings.md, in Markdown; Doc's relative links start
	// from that page.
	Default, Doc string
}

// Values are the settings as the operator holds them: what the controllers
// need to know about the cluster.
type Values struct {
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
	// ToolsImage runs the helpers the operator adds to its tasks' pods (the
	// clone of spec.repos: `clone`; the file outputs sidecar: `outputs`):
	// an image with the operator's binary. Empty: the operator's own image
	// (OPERATOR_IMAGE, which install sets on its Deployment).
	ToolsImage string
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
	// AllowedPodAnnotationDomains are the domains (each covering its
	// subdomains; "*" any) of the annotation keys tasks, workflow steps
	// and apps may pass to their pods in podMetadata.annotations; a key
	// without a domain is always allowed.
	AllowedPodAnnotationDomains []string

	// NamespaceSelector is a label selector (labels.Parse) of the
	// namespaces the operator serves; every namespace when empty.
	NamespaceSelector string
	// DefaultTTL is how long finished AgentTasks and Workflows are kept
	// where neither their spec nor their namespace's tier says; 0 keeps
	// them until someone deletes them.
	DefaultTTL time.Duration
	// SucceededPodRetention is how long the pod of a succeeded AgentTask
	// is kept once its outputs are recorded; 0 keeps it as long as the
	// task.
	SucceededPodRetention time.Duration
	// ForbidSelfApproval: an approval by the user a workflow's
	// spec.requestedBy names does not count, nor is reused by a retry.
	ForbidSelfApproval bool
	// KubeAPIQPS and KubeAPIBurst limit the operator's requests to the API
	// server (client-go's token bucket).
	KubeAPIQPS   float64
	KubeAPIBurst int
	// MaxConcurrentReconciles is each controller's number of workers;
	// ControllerWorkers overrides it per controller (NAME=N).
	MaxConcurrentReconciles int
	ControllerWorkers       map[string]string
	// NamespaceFairness shares each controller's reconciles, and each
	// kind's request budget, among the namespaces with work waiting, in
	// turn (operator/fairness); off, they are first come, first served.
	NamespaceFairness bool
}

// Controllers are the operator's controllers by the names --controllers
// and --controller-workers take.
var Controllers = []string{"agenttask", "cronworkflow", "schedext", "tenant", "userdeployment", "workflow"}

// All lists every setting, in the order `kubectl sched doctor` and the
// docs show them.
var All = []Setting{
	{
		Flag: "ingress-domain", Env: "INGRESS_DOMAIN", Kind: String,
		Seed:        "DEPLOYMENT_DOMAIN",
		Field:       func(v *Values) any { return &v.IngressDomain },
		Check:       dnsName,
		Help:        "Domain of public hosts: <name>.<namespace>.<domain>.",
		InstallHelp: "Domain of public apps' hosts: <app>.<namespace>.<domain>.",
		Default:     "`apps.example.com`",
		Doc:         "public apps get the host `<app>.<namespace>.<domain>`; under it an app may route only `<label>.<its namespace>.<domain>` (see [the security model](../admins/security.md#tenants-are-kept-apart))",
	},
	{
		Flag: "ingress-provider", Env: "INGRESS_PROVIDER", Kind: String,
		Field:       func(v *Values) any { return &v.IngressProvider },
		Check:       oneOf("ingress", "traefik"),
		Help:        "ingress (networking.k8s.io/v1 Ingress) or traefik (IngressRoute when served).",
		InstallHelp: "ingress (networking.k8s.io/v1 Ingress) or traefik (Traefik IngressRoute, when the cluster serves traefik.io/v1alpha1).",
		Default:     "`ingress`",
		Doc:         "`ingress` (networking.k8s.io/v1 Ingress) or `traefik` (a Traefik IngressRoute, when traefik.io/v1alpha1 is served)",
	},
	{
		Flag: "ingress-class", Env: "INGRESS_CLASS", Kind: String,
		Field:       func(v *Values) any { return &v.IngressClass },
		Help:        "Default ingressClassName.",
		InstallHelp: "ingressClassName of apps that name none; the cluster's default class when empty.",
		Default:     "none (the cluster's default class)",
		Doc:         "`ingressClassName` of apps that name none",
	},
	{
		Flag: "allowed-ingress-classes", Env: "ALLOWED_INGRESS_CLASSES", Kind: List,
		Field:       func(v *Values) any { return &v.AllowedIngressClasses },
		Split:       splitList,
		Check:       ingressClasses,
		Help:        "Comma-separated ingress classes an app may name in spec.ingress.className besides --ingress-class; none when empty.",
		InstallHelp: "Comma-separated ingress classes an app may name in spec.ingress.className besides --ingress-class; none when empty.",
		Default:     "none",
		Doc:         "comma-separated classes besides `--ingress-class` that an app may name in `spec.ingress.className`; another is refused at apply time and gets no route (`IngressClassNotAllowed`)",
	},
	{
		Flag: "ingress-namespace", Env: "INGRESS_NAMESPACE", Kind: String,
		Field:       func(v *Values) any { return &v.IngressNamespace },
		Check:       optionalLabel,
		Help:        "Namespace of the ingress controller, admitted by NetworkPolicies.",
		InstallHelp: "Namespace of the ingress controller, which apps' NetworkPolicies admit.",
		Default:     "`ingress-nginx`",
		Doc:         "namespace of the ingress controller, admitted by apps' NetworkPolicies",
	},
	{
		Flag: "monitoring-namespace", Env: "MONITORING_NAMESPACE", Kind: String,
		Field:       func(v *Values) any { return &v.MonitoringNamespace },
		Check:       optionalLabel,
		Help:        "Namespace of the cluster's Prometheus, admitted by tenant namespaces and on apps' allowFrom.metricsPorts.",
		InstallHelp: "Namespace of the cluster's Prometheus, which tenant namespaces admit and apps admit on their allowFrom.metricsPorts.",
		Default:     "`monitoring`",
		Doc:         "namespace of the cluster's Prometheus: tenant namespaces admit it, and apps on the ports of their `allowFrom.metricsPorts`",
	},
	{
		Flag: "network-policies", Env: "NETWORK_POLICIES", Kind: Bool,
		Seed: "DISABLE_NETWORK_POLICIES", SeedNegates: true,
		Field:       func(v *Values) any { return &v.NetworkPolicies },
		Check:       oneOf("true", "false"),
		Help:        "Isolate apps and tenant namespaces with NetworkPolicies; turn off on development clusters.",
		InstallHelp: "true isolates apps and tenant namespaces with NetworkPolicies; false on clusters that do not enforce them.",
		Default:     "`true`",
		Doc:         "isolate apps and tenant namespaces with NetworkPolicies (`false` where they are not enforced: no app or tenant policy is made, and the tenant controller removes the ones it made)",
	},
	{
		Flag: "cluster-secret-store", Env: "CLUSTER_SECRET_STORE", Kind: String,
		Field:       func(v *Values) any { return &v.ClusterSecretStore },
		Help:        "External Secrets ClusterSecretStore for external secret references.",
		InstallHelp: "External Secrets ClusterSecretStore that apps' external secret references read from; none when empty.",
		Default:     "none",
		Doc:         "External Secrets ClusterSecretStore that `secrets[].external` references read from",
	},
	{
		Flag: "external-secret-key-template", Env: "EXTERNAL_SECRET_KEY_TEMPLATE", Kind: String,
		Field:       func(v *Values) any { return &v.ExternalSecretKeyTemplate },
		Check:       keyTemplate,
		Help:        "Prefix every external secret key of an app must start with; {{namespace}} is the app's namespace; empty allows any key.",
		InstallHelp: "Prefix every external secret key must start with, {{namespace}} being the namespace, ending in /, so tenants sharing the store read only their own keys; empty allows any key. Also enforced on every ExternalSecret and PushSecret (see --external-secrets-policy).",
		Default:     "`{{namespace}}/`",
		Doc:         "prefix every external key must start with (`{{namespace}}` is the namespace); it must hold `{{namespace}}` and end in `/` (install and the operator refuse another), or be empty to allow any key. A key outside it is refused and no ExternalSecret made; the install policy below holds every ExternalSecret and PushSecret to it too",
	},
	{
		Flag: "external-secret-reserved-paths", Env: "EXTERNAL_SECRET_RESERVED_PATHS", Kind: List,
		Field:       func(v *Values) any { return &v.ExternalSecretReservedPaths },
		Split:       secretstore.ParsePaths,
		Check:       reservedPaths,
		Help:        "Comma-separated top-level paths of the ClusterSecretStore that no namespace's key prefix may cover: its mount (Vault's path; External Secrets strips it from keys that start with it) and folders of shared secrets.",
		InstallHelp: "Comma-separated top-level paths of the ClusterSecretStore no namespace's key prefix may cover: its mount (Vault's path, which External Secrets strips from keys that start with it) and folders of shared secrets.",
		Default:     "`secret` (Vault's default KV mount)",
		Doc:         "comma-separated top-level paths of the ClusterSecretStore no namespace's prefix may cover: its mount (External Secrets strips `<mount>/` from a key that starts with it, so namespace `secret` would read `secret/<anyone>/...` as `<anyone>/...`) and folders of shared secrets. A namespace whose prefix covers one gets no external secret",
	},
	{
		Flag: "cluster-issuer", Env: "CLUSTER_ISSUER", Kind: String,
		Field:       func(v *Values) any { return &v.ClusterIssuer },
		Help:        "cert-manager ClusterIssuer for public apps' certificates, used when cert-manager is installed.",
		InstallHelp: "cert-manager ClusterIssuer that signs public apps' certificates when cert-manager is installed; no certificates when empty.",
		Default:     "none",
		Doc:         "cert-manager ClusterIssuer that signs public apps' certificates (see [HTTPS](../admins/https.md))",
	},
	{
		Flag: "priority-class", Env: "PRIORITY_CLASSES", Kind: Map,
		Metavar:     "PRIORITY=CLASS",
		Field:       func(v *Values) any { return v.PriorityClasses },
		Check:       priorityClass,
		Help:        "PRIORITY=CLASS mapping a placement priority to a PriorityClass; repeatable.",
		InstallHelp: "PRIORITY=CLASS maps placement.priority (Critical, High, Medium, Low) to an existing PriorityClass instead of the kubectl-sched-<priority> one install creates; PRIORITY= leaves it unmapped. Repeatable.",
		Default:     "`Critical=kubectl-sched-critical,High=kubectl-sched-high,Medium=kubectl-sched-medium,Low=kubectl-sched-low`",
		Doc:         "maps `placement.priority` to a PriorityClass; repeatable; `PRIORITY=` leaves a level unmapped",
	},
	{
		Flag: "scheduler-image", Env: "SCHEDULER_IMAGES", Kind: Map,
		Metavar:     "NAME=IMAGE",
		Field:       func(v *Values) any { return v.SchedulerImages },
		Check:       schedulerImage,
		Help:        "NAME=IMAGE resolving a well-known scheduler; repeatable.",
		EnvNote:     ", comma-separated",
		InstallHelp: "NAME=IMAGE resolves a well-known sched_ext scheduler (scx_lavd) to an image instead of the pinned scx release. Repeatable.",
		Default:     "every well-known scheduler: `ghcr.io/sched-ext/scx:v1.0.14`",
		Doc:         "image of a well-known sched_ext scheduler; repeatable. One SchedExt can run its scheduler from another image with `scheduler.image` beside `scheduler.name` (`schedext set --sched scx_lavd --image ...`)",
	},
	{
		Flag: "allowed-scheduler-registries", Env: "ALLOWED_SCHEDULER_REGISTRIES", Kind: List,
		Field:       func(v *Values) any { return &v.AllowedSchedulerRegistries },
		Split:       splitList,
		Check:       registries,
		Help:        "Comma-separated registries or repositories (ghcr.io/sched-ext,registry.example.com) a SchedExt's own scheduler.image must come from; any when empty.",
		InstallHelp: "Comma-separated registries or repositories (ghcr.io/sched-ext,registry.example.com) a SchedExt's own scheduler.image must come from; any when empty.",
		Default:     "none (any)",
		Doc:         "comma-separated registries or repositories (`ghcr.io/sched-ext,registry.example.com`) that a SchedExt's own `scheduler.image` must come from; another gets no DaemonSet and the condition `ImageNotAllowed` naming the list. Images of `--scheduler-image` are the admin's own and always run",
	},
	{
		Flag: "allowed-pod-annotation-domains", Env: "ALLOWED_POD_ANNOTATION_DOMAINS", Kind: List,
		Field:       func(v *Values) any { return &v.AllowedPodAnnotationDomains },
		Split:       splitList,
		Check:       annotationDomains,
		Help:        "Comma-separated domains (each with its subdomains; * any) of the annotation keys tasks, workflow steps and apps may pass to their pods; keys without a domain are always allowed.",
		InstallHelp: "Comma-separated domains (each with its subdomains; * any) of the annotation keys tasks, workflow steps and apps may pass to their pods in podMetadata.annotations; keys without a domain are always allowed. Others (Multus, Calico, Istio, the cluster autoscaler) change networking or block drains.",
		Default:     "`kubectl-sched.dev`",
		Doc:         "comma-separated domains whose annotation keys tasks, workflow steps and apps may pass to their pods in `podMetadata.annotations`; a domain covers its subdomains, `*` allows any, a key without a domain (`note`) is always allowed. Other keys (Multus's `k8s.v1.cni.cncf.io`, Calico's `cni.projectcalico.org`, Istio's `sidecar.istio.io`, `cluster-autoscaler.kubernetes.io`) change a pod's network or block node drains: refused at apply time, and a task or service admitted before is not started (`AnnotationNotAllowed`; see Security model)",
	},
	{
		Flag: "scheduler-namespace", Env: "SCHEDULER_NAMESPACE", Kind: String,
		Field:       func(v *Values) any { return &v.SchedulerNamespace },
		Check:       label,
		Help:        "Namespace of the SchedExt DaemonSets.",
		InstallHelp: "Namespace of the SchedExt DaemonSets: install creates it (Pod Security privileged) with the operator's Role for DaemonSets there.",
		Default:     "`kubectl-sched-schedulers`",
		Doc:         "namespace of the SchedExt DaemonSets; install creates it (Pod Security `privileged`) with the operator's Role for DaemonSets there. It may not be the operator's namespace",
	},
	{
		Flag: "helper-image", Env: "HELPER_IMAGE", Kind: String,
		Field:       func(v *Values) any { return &v.HelperImage },
		Check:       nonEmpty,
		Help:        "Image with sh and cat for the SchedExt pods' kernel preflight and attach check.",
		InstallHelp: "Image with sh and cat for the SchedExt pods' kernel preflight and attach check (mirror it on air-gapped clusters).",
		Default:     "`busybox:1.37`",
		Doc:         "image with `sh` and `cat` for the SchedExt pods' kernel preflight and attach check",
	},
	{
		Flag: "tools-image", Env: "TOOLS_IMAGE", Kind: String,
		Field:       func(v *Values) any { return &v.ToolsImage },
		Help:        "Image with the operator's binary for the helpers in tasks' pods (the clone of spec.repos, the file outputs sidecar); the operator's own image (OPERATOR_IMAGE) when empty.",
		InstallHelp: "Image with the operator's binary for the helpers in tasks' pods (the clone of spec.repos, the file outputs sidecar); the operator's own image when empty, so it follows --image (mirror it on air-gapped clusters).",
		Default:     "the operator's own image",
		Doc:         "image with the operator's binary that runs the helpers the operator adds to tasks' pods: the init container that clones a task's `spec.repos` ([repositories](../users/tasks.md#repositories)) and the sidecar that hands over its file outputs (`outputs.fromDir`, [outputs](../users/tasks.md#outputs-from-files)). Empty: the operator's own image, which install gives its Deployment as `OPERATOR_IMAGE`, so the helpers are released, mirrored and upgraded with the operator",
	},
	{
		Flag: "namespace-selector", Env: "NAMESPACE_SELECTOR", Kind: String,
		Field:       func(v *Values) any { return &v.NamespaceSelector },
		Check:       labelSelector,
		Help:        "Label selector of the namespaces the operator serves (sched.kubectl-sched.dev/tier: the namespaces of tenant create); every namespace when empty.",
		InstallHelp: "Label selector of the namespaces the operator serves, such as sched.kubectl-sched.dev/tier (every namespace 'kubectl sched tenant create' made); its caches then hold only those namespaces' objects. Every namespace when empty.",
		Default:     "none (every namespace)",
		Doc:         "label selector of the namespaces the operator serves; `sched.kubectl-sched.dev/tier` picks every namespace `kubectl sched tenant create` made. Its caches then hold only those namespaces' objects (and its own and the scheduler namespace's); objects elsewhere are never read or changed. A namespace labelled or unlabelled is taken up or let go while it runs (see [Scale settings](../admins/settings.md#scale-settings))",
	},
	{
		Flag: "default-ttl", Env: "DEFAULT_TTL", Kind: Duration,
		Field:       func(v *Values) any { return &v.DefaultTTL },
		Check:       duration,
		Help:        "How long finished AgentTasks and Workflows are kept when neither their spec nor their namespace's tier sets a ttlAfterFinished; 0 keeps them.",
		InstallHelp: "How long finished AgentTasks and Workflows are kept when neither their spec nor their namespace's tier sets a ttlAfterFinished (a Go duration: 168h); 0 keeps them until someone deletes them.",
		Default:     "`168h` (7 days)",
		Doc:         "the `ttlAfterFinished` of finished AgentTasks and Workflows whose spec has none and whose namespace's tier has no default (status.expiry says `InstallDefault`); `0` keeps them until someone deletes them (see [What is cleaned up, and when](../admins/cleanup.md))",
	},
	{
		Flag: "succeeded-pod-retention", Env: "SUCCEEDED_POD_RETENTION", Kind: Duration,
		Field:       func(v *Values) any { return &v.SucceededPodRetention },
		Check:       duration,
		Help:        "How long the pod of a succeeded AgentTask is kept after the task finished, its outputs recorded; 0 keeps it as long as the task.",
		InstallHelp: "How long the pod of a succeeded AgentTask is kept after the task finished, its outputs recorded in its status (a Go duration); 0 keeps it as long as the task. Pods of failed tasks are always kept as long as the task.",
		Default:     "`10m`",
		Doc:         "how long the pod of a succeeded AgentTask (and so its log) is kept once the task has finished and its outputs are in its status; then the operator deletes it. `0` keeps it as long as the task. Pods of failed or timed-out tasks are kept as long as the task",
	},
	{
		Flag: "forbid-self-approval", Env: "FORBID_SELF_APPROVAL", Kind: Bool,
		Field:       func(v *Values) any { return &v.ForbidSelfApproval },
		Check:       oneOf("true", "false"),
		Help:        "Refuse a workflow step's approval by the user who asked for the run (spec.requestedBy), and never reuse one in such a run's retry.",
		InstallHelp: "true refuses a workflow step's approval by the user who asked for the run (spec.requestedBy, which a workflow with an approval step must then set): someone else approves. false lets anyone who may decide approve.",
		Default:     "`false`",
		Doc:         "`true`: nobody approves a workflow run they asked for (its `spec.requestedBy`): the admission policy `kubectl-sched-self-approval` refuses such an approval and a workflow with an approval step that does not set `requestedBy`, and the operator neither counts such an approval nor reuses one in a retry the approver asked for (see [Steps that wait for approval](../users/workflows.md#steps-that-wait-for-approval))",
	},
	{
		Flag: "kube-api-qps", Env: "KUBE_API_QPS", Kind: Number,
		Field:       func(v *Values) any { return &v.KubeAPIQPS },
		Check:       positiveNumber,
		Help:        "Requests per second the operator sends the API server for each kind of object, on average.",
		InstallHelp: "Requests per second the operator sends the API server for each kind of object, on average (client-go's QPS, one budget per kind).",
		Default:     "`50`",
		Doc:         "requests per second the operator sends the API server for each kind of object, on average (client-go's QPS, one budget per kind; its own default, 5, is too few for a busy cluster)",
	},
	{
		Flag: "kube-api-burst", Env: "KUBE_API_BURST", Kind: Int,
		Field:       func(v *Values) any { return &v.KubeAPIBurst },
		Check:       positiveInt,
		Help:        "Requests the operator may send the API server at once, above --kube-api-qps.",
		InstallHelp: "Requests the operator may send the API server at once, above --kube-api-qps (client-go's burst).",
		Default:     "`100`",
		Doc:         "requests the operator may send at once before `--kube-api-qps` paces it (client-go's burst)",
	},
	{
		Flag: "max-concurrent-reconciles", Env: "MAX_CONCURRENT_RECONCILES", Kind: Int,
		Field:       func(v *Values) any { return &v.MaxConcurrentReconciles },
		Check:       positiveInt,
		Help:        "Reconciles each controller runs at once (its workers).",
		InstallHelp: "Reconciles each controller runs at once (its workers); --controller-workers sets one controller's.",
		Default:     "`10`",
		Doc:         "reconciles each controller runs at once; `--controller-workers` overrides it per controller",
	},
	{
		Flag: "controller-workers", Env: "CONTROLLER_WORKERS", Kind: Map,
		Metavar:     "NAME=N",
		Field:       func(v *Values) any { return v.ControllerWorkers },
		Check:       controllerWorkers,
		Help:        "NAME=N: reconciles the controller NAME runs at once, instead of --max-concurrent-reconciles; repeatable.",
		EnvNote:     ", comma-separated",
		InstallHelp: "NAME=N runs N reconciles of controller NAME (agenttask, cronworkflow, schedext, tenant, userdeployment, workflow) at once instead of --max-concurrent-reconciles; NAME= goes back to it. Repeatable.",
		Default:     "none (each runs `--max-concurrent-reconciles`)",
		Doc:         "workers of one controller (`agenttask`, `cronworkflow`, `schedext`, `tenant`, `userdeployment`, `workflow`); repeatable; `NAME=` goes back to `--max-concurrent-reconciles`",
	},
	{
		Flag: "namespace-fairness", Env: "NAMESPACE_FAIRNESS", Kind: Bool,
		Field:       func(v *Values) any { return &v.NamespaceFairness },
		Check:       oneOf("true", "false"),
		Help:        "Share the operator's work among namespaces: each controller hands out its reconciles, and each kind's request budget its tokens, in turn across the namespaces with work waiting; false: first come, first served.",
		InstallHelp: "true shares the operator's work among namespaces: each controller hands out its reconciles, and each kind's request budget (--kube-api-qps) its tokens, in turn across the namespaces with work waiting, so one tenant's backlog does not delay another's; false serves them first come, first served.",
		Default:     "`true`",
		Doc:         "each controller hands out its reconciles, and each kind's `--kube-api-qps` budget its tokens, in turn across the namespaces that have work waiting, one each (higher priorities first, as controller-runtime's queue does), so one namespace's backlog delays another's next reconcile or request by at most one per busy namespace; `false` serves them first come, first served (see [Scale settings](../admins/settings.md#scale-settings))",
	},
}
