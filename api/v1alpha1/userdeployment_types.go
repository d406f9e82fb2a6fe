package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Exposure says who can reach a service.
// +kubebuilder:validation:Enum=None;Internal;Public
// +kubebuilder:validation:MaxLength=16
type Exposure string

const (
	// ExposureNone creates no Service: nothing connects to it.
	ExposureNone Exposure = "None"
	// ExposureInternal creates a ClusterIP Service reachable from the app's own pods.
	ExposureInternal Exposure = "Internal"
	// ExposurePublic also routes the ingress host to the service.
	ExposurePublic Exposure = "Public"
)

// DesiredState says whether an app's services should run.
// +kubebuilder:validation:Enum=Running;Stopped
// +kubebuilder:validation:MaxLength=16
type DesiredState string

// The desired states.
const (
	StateRunning DesiredState = "Running"
	StateStopped DesiredState = "Stopped"
)

// NetworkIsolation says which traffic may reach the app's pods.
// +kubebuilder:validation:Enum=Isolated;Open
// +kubebuilder:validation:MaxLength=16
type NetworkIsolation string

const (
	// IsolationIsolated allows ingress only from the app's own pods and the
	// ingress controller's namespace.
	IsolationIsolated NetworkIsolation = "Isolated"
	// IsolationOpen admits traffic from anywhere (no ingress rule).
	IsolationOpen NetworkIsolation = "Open"
)

// Egress says where an app's pods may connect to. DNS (port 53, UDP and
// TCP) is always allowed.
// +kubebuilder:validation:Enum=Internet;Namespace;None
// +kubebuilder:validation:MaxLength=16
type Egress string

const (
	// EgressInternet allows every destination (no egress rule).
	EgressInternet Egress = "Internet"
	// EgressNamespace allows DNS and the pods of the app's namespace.
	EgressNamespace Egress = "Namespace"
	// EgressNone allows DNS only.
	EgressNone Egress = "None"
)

// AllowFrom lets more traffic reach an Isolated app, besides its own pods
// and the ingress controller. Each item adds to the others.
type AllowFrom struct {
	// Apps are UserDeployments of the same namespace, by name, whose pods
	// may connect.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Apps []string `json:"apps,omitempty"`

	// Tasks admits the pods of the namespace's AgentTasks, workflow steps
	// included (a test step calling the app).
	// +optional
	Tasks bool `json:"tasks,omitempty"`

	// Namespaces admits the pods of namespaces whose labels match one of
	// these selectors (matchLabels, each at most 8 labels).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Namespaces []NamespaceLabels `json:"namespaces,omitempty"`

	// MetricsPorts admits the cluster's monitoring namespace (the
	// operator's --monitoring-namespace) on these ports only, for a
	// Prometheus scrape.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=65535
	MetricsPorts []int32 `json:"metricsPorts,omitempty"`
}

// NamespaceLabels selects namespaces by their labels.
type NamespaceLabels struct {
	// MatchLabels a namespace must all carry; kubernetes.io/metadata.name
	// names one namespace.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && size(self[k]) <= 63)",message="namespace label keys may have at most 317 characters and values 63"
	MatchLabels map[string]string `json:"matchLabels"`
}

// UserDeploymentSpec describes a multi-service application.
// +kubebuilder:validation:XValidation:rule="!has(self.allowFrom) || !has(self.networkIsolation) || self.networkIsolation != 'Open'",message="allowFrom admits traffic to an Isolated app; with networkIsolation: Open everything is admitted already, so remove allowFrom or set networkIsolation: Isolated",fieldPath=".allowFrom"
// +kubebuilder:validation:XValidation:rule="!has(self.ingress) || self.services.exists(s, s.exposure == 'Public')",message="ingress is set but no service has exposure: Public",fieldPath=".ingress"
// +kubebuilder:validation:XValidation:rule="!has(self.secrets) || self.secrets.all(sec, !has(sec.services) || sec.services.all(n, self.services.exists(s, s.name == n)))",message="a secret names a service that is not in spec.services",fieldPath=".secrets"
type UserDeploymentSpec struct {
	// Services of the app. Each becomes a Deployment and, unless its exposure
	// is None, a ClusterIP Service named <userdeployment>-<service>.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Services []ServiceSpec `json:"services"`

	// Config becomes a ConfigMap named <userdeployment>-config whose keys are
	// set as environment variables in every service: at most 128 keys of at
	// most 253 characters, values of at most 8192 (1 MiB in all, what a
	// ConfigMap holds).
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 253 && size(self[k]) <= 8192)",message="config keys may have at most 253 characters and values 8192"
	Config map[string]string `json:"config,omitempty"`

	// Secrets are references only: an existing Secret, or a key in an
	// external store synced by External Secrets. Values never appear here.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Secrets []SecretReference `json:"secrets,omitempty"`

	// Ingress sets the host, path, class and TLS for public services. When
	// omitted, public services get the host <name>.<namespace>.<domain>, with
	// the domain from the operator's configuration.
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`

	// Placement says which nodes the services run on.
	// +optional
	Placement *Placement `json:"placement,omitempty"`

	// NetworkIsolation is Isolated (the default: ingress only from the app's
	// own pods, the ingress controller and what allowFrom names) or Open.
	// +optional
	// +kubebuilder:default=Isolated
	NetworkIsolation NetworkIsolation `json:"networkIsolation,omitempty"`

	// AllowFrom admits more traffic to an Isolated app: apps of the
	// namespace, its tasks and workflow steps, namespaces by label, the
	// monitoring namespace on metrics ports.
	// +optional
	AllowFrom *AllowFrom `json:"allowFrom,omitempty"`

	// Egress is Internet (the default: anywhere), Namespace (DNS and the
	// namespace's pods) or None (DNS only).
	// +optional
	Egress Egress `json:"egress,omitempty"`

	// State is Running (the default) or Stopped. Stopped scales every service
	// to zero and keeps everything else.
	// +optional
	// +kubebuilder:default=Running
	State DesiredState `json:"state,omitempty"`

	// RestartedAt maps a service name to when its pods were last asked to
	// restart; a new value rolls them, as `kubectl rollout restart` does.
	// `kubectl sched restart` sets it.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 63 && size(self[k]) <= 64)",message="restartedAt keys are service names and values timestamps of at most 64 characters"
	RestartedAt map[string]string `json:"restartedAt,omitempty"`

	// ProgressDeadline is how long a service's rollout may go without
	// progress (its start, or one more replica ready) before the app is
	// Degraded with reason ProgressDeadlineExceeded. Until then a cause that
	// may clear by itself (a pod waiting for a node or for its claims to
	// bind, containers being created) keeps the app Progressing and is named
	// in its conditions; a cause that needs someone to act (an image that
	// cannot be pulled, a crash loop, a missing Secret or ConfigMap, a quota
	// or admission refusal) makes it Degraded at once. Between 10s and 24h;
	// 10m when unset, as a Deployment's progressDeadlineSeconds, which the
	// operator sets to it.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="progressDeadline must be between 10s and 24h"
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`

	// RevisionHistoryLimit is how many revisions of the app the operator
	// keeps, the current one included: 10 when unset, between 1 and 100.
	// A revision records what the app's pods run, and every change to it
	// makes a new one: the services' images, commands, args, env, ports,
	// resources, probes, pod metadata, security context, service account
	// and image pull secrets, the config, the secret references and the
	// secrets' values (annotation sched.kubectl-sched.dev/secret-hash), and
	// the placement. Replicas, exposure, ingress paths, volumes, the
	// ingress, network rules, state, restarts and these settings do not
	// make one. Each is a ControllerRevision <name>.v<N> controlled by the
	// app; `kubectl sched history` lists them and `kubectl sched rollback`
	// restores one as a new revision. The revision the services run, and
	// the last that became Running, are kept beyond the limit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Rollback says what happens to a new revision that does not become
	// Running within spec.progressDeadline of its start (its creation, or
	// the app's start if it was Stopped then): Never (the
	// default) leaves the app Degraded on it; OnDegraded has the operator
	// run the last revision that became Running again, with a Warning
	// event and the condition RolledBack. The operator rolls back what it
	// derives (Deployments, StatefulSets, the ConfigMap, ExternalSecrets)
	// to that revision's template and leaves the spec as its owner wrote
	// it: it never writes the spec, so it does not fight whoever applies
	// it (a person, a script, GitOps), and status.currentRevision still
	// names the spec's revision while status.rolledBack and each
	// service's revision say what runs. A rollback happens once per
	// revision: if the revision rolled back to does not run either, the
	// app is Degraded and stays so. Changing the spec again (a new
	// revision) tries that one; setting Never runs the spec's revision
	// again; `kubectl sched rollback` makes the spec the running revision.
	// +optional
	Rollback RollbackPolicy `json:"rollback,omitempty"`
}

// RollbackPolicy says whether the operator rolls back a revision that does
// not become Running.
// +kubebuilder:validation:Enum=Never;OnDegraded
// +kubebuilder:validation:MaxLength=16
type RollbackPolicy string

// The rollback policies.
const (
	RollbackNever      RollbackPolicy = "Never"
	RollbackOnDegraded RollbackPolicy = "OnDegraded"
)

// DefaultRevisionHistoryLimit is spec.revisionHistoryLimit when it is unset.
const DefaultRevisionHistoryLimit = 10

// HistoryLimit is spec.revisionHistoryLimit, or its default.
func (s *UserDeploymentSpec) HistoryLimit() int {
	if s.RevisionHistoryLimit == nil {
		return DefaultRevisionHistoryLimit
	}
	return int(*s.RevisionHistoryLimit)
}

// DefaultProgressDeadline is spec.progressDeadline when it is unset, a
// Deployment's default.
const DefaultProgressDeadline = 10 * time.Minute

// Deadline is spec.progressDeadline, or its default.
func (s *UserDeploymentSpec) Deadline() time.Duration {
	if s.ProgressDeadline == nil {
		return DefaultProgressDeadline
	}
	return s.ProgressDeadline.Duration
}

// ServiceSpec is one service of an app.
// +kubebuilder:validation:XValidation:rule="self.exposure == 'None' || (has(self.ports) && size(self.ports) > 0)",message="a service with exposure Internal or Public needs at least one port"
type ServiceSpec struct {
	// Name of the service, a DNS label. Derived objects are named
	// <userdeployment>-<name>, which must fit in 63 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Image to run.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// Replicas while the app is Running. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Replicas *int32 `json:"replicas,omitempty"`

	// Command overrides the image's entrypoint: at most 64 strings of at
	// most 4096 characters.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	Command []string `json:"command,omitempty"`

	// Args to the command: at most 256 strings of at most 4096 characters.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=4096
	Args []string `json:"args,omitempty"`

	// Ports the service listens on.
	// +optional
	// +listType=map
	// +listMapKey=port
	// +kubebuilder:validation:MaxItems=16
	Ports []ServicePort `json:"ports,omitempty"`

	// Env sets environment variables, after the app's config.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	Env []EnvVar `json:"env,omitempty"`

	// Resources the container requests and is limited to.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`

	// ReadinessProbe decides when a pod receives traffic.
	// +optional
	ReadinessProbe *Probe `json:"readinessProbe,omitempty"`

	// LivenessProbe restarts a container that stops answering.
	// +optional
	LivenessProbe *Probe `json:"livenessProbe,omitempty"`

	// Exposure is None, Internal (the default) or Public.
	// +optional
	// +kubebuilder:default=Internal
	Exposure Exposure `json:"exposure,omitempty"`

	// IngressPath routes this path of the ingress host to a public service.
	// Defaults to the ingress path when one service is public, else /<name>.
	// A path starts with / and holds only letters, digits and ._~%/+:@=-
	// (nothing that could rewrite an ingress controller's routing rule).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9._~%/+:@=-]*$`
	IngressPath string `json:"ingressPath,omitempty"`

	// PodMetadata holds labels and annotations passed through to the
	// service's pods. The operator's own labels win over these.
	// +optional
	PodMetadata *PodMetadata `json:"podMetadata,omitempty"`

	// Volumes are persistent volumes, one set per replica. A service with
	// volumes runs as a StatefulSet instead of a Deployment, so each replica
	// keeps its own claims (<volume>-<app>-<service>-<ordinal>) across
	// restarts, rollouts and stop/start. The claims outlive the app: delete
	// them to delete the data. Volumes cannot be changed once set (a
	// StatefulSet's claim templates are fixed); removing them all turns the
	// service back into a Deployment, and leaves the claims.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a service's volumes cannot change once it has them (a StatefulSet's claims are fixed); remove them and add them again under new names, or use a new service"
	Volumes []ServiceVolume `json:"volumes,omitempty"`

	// ServiceAccountName the pods run as; the namespace's default when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// SecurityContext of the service's container, merged field by field over
	// the restricted default (non-root, no privilege escalation, all
	// capabilities dropped, seccomp RuntimeDefault). Privileged containers,
	// privilege escalation, added capabilities other than NET_BIND_SERVICE and
	// UID 0 are refused at admission unless a cluster admin opts the namespace out.
	// +optional
	SecurityContext *SecurityContext `json:"securityContext,omitempty"`

	// ImagePullSecrets name Secrets in the app's namespace used to pull the
	// image: at most 8 names of at most 253 characters.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(r, size(r.?name.orValue('')) <= 253)",message="image pull secret names may have at most 253 characters"
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// ServiceVolume is a persistent volume mounted into a service's container.
// +kubebuilder:validation:XValidation:rule="!self.name.startsWith('secret-')",message="volume names starting with secret- are taken by mounted secrets",fieldPath=".name"
type ServiceVolume struct {
	// Name of the volume, a DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Size of each replica's volume, for example 10Gi (at most 64 characters).
	// +kubebuilder:validation:XValidation:rule="type(self) in [int] || size(self) <= 64",message="size may have at most 64 characters"
	Size resource.Quantity `json:"size"`

	// MountPath in the container.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/`
	MountPath string `json:"mountPath"`

	// StorageClass of the claims; the cluster's default when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClass string `json:"storageClass,omitempty"`
}

// ServicePort is a port a service listens on.
type ServicePort struct {
	// Name of the port, an IANA service name.
	// +optional
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`

	// Port number.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// Protocol is TCP (the default) or UDP.
	// +optional
	// +kubebuilder:default=TCP
	// +kubebuilder:validation:Enum=TCP;UDP
	Protocol corev1.Protocol `json:"protocol,omitempty"`
}

// SecretReference names where a secret's values live, never the values.
// +kubebuilder:validation:XValidation:rule="has(self.secretName) != has(self.external)",message="set exactly one of secretName or external"
// +kubebuilder:validation:XValidation:rule="!(has(self.mountPath) && has(self.envPrefix))",message="set mountPath (files) or envPrefix (environment), not both"
type SecretReference struct {
	// Name identifies the reference. For external secrets it also names the
	// Secret that External Secrets creates: <userdeployment>-<name>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// SecretName is an existing Secret in the app's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName,omitempty"`

	// External is a key in an external store, synced by External Secrets
	// through the ClusterSecretStore the operator is configured with.
	// +optional
	External *ExternalSecretSource `json:"external,omitempty"`

	// MountPath mounts the secret's keys as files there. Without it the keys
	// become environment variables.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/`
	MountPath string `json:"mountPath,omitempty"`

	// EnvPrefix is prepended to each key when the keys become environment variables.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	EnvPrefix string `json:"envPrefix,omitempty"`

	// Services that receive the secret; all services when empty.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=40
	Services []string `json:"services,omitempty"`
}

// ExternalSecretSource is a key in an external secret store.
type ExternalSecretSource struct {
	// Key in the store, for example a Vault path.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key"`

	// Property selects one property of the key; all properties when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Property string `json:"property,omitempty"`
}

// IngressSpec routes public services.
type IngressSpec struct {
	// Host name. Defaults to <name>.<namespace>.<domain>. Under the
	// operator's ingress domain an app may route only
	// <label>.<its namespace>.<domain>; a host outside it only when the
	// namespace's allow-list (annotation sched.kubectl-sched.dev/allowed-hosts,
	// set by a cluster admin) has it. No wildcard, no single-label name, no
	// IP address. A host that a route of another namespace serves is not
	// routed (HostConflict).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9.]+$')",message="an ingress host is a DNS name, not an IP address"
	Host string `json:"host,omitempty"`

	// Path prefix routed to the public service. Defaults to /. It starts
	// with / and holds only letters, digits and ._~%/+:@=-.
	// +optional
	// +kubebuilder:default="/"
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9._~%/+:@=-]*$`
	Path string `json:"path,omitempty"`

	// ClassName of the ingress controller: the operator's --ingress-class
	// (the cluster default when that is empty) when omitted; otherwise that
	// class or one in --allowed-ingress-classes (IngressClassNotAllowed).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClassName string `json:"className,omitempty"`

	// TLS terminates HTTPS with the certificate in this Secret.
	// +optional
	TLS *IngressTLS `json:"tls,omitempty"`
}

// IngressTLS names the certificate for the ingress host.
type IngressTLS struct {
	// SecretName of a kubernetes.io/tls Secret in the app's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`
}

// UserDeploymentPhase summarises an app's state.
//
//	Pending ──> Progressing ──> Running <──> Degraded
//	   any ──> Stopped (state: Stopped) ──> Progressing (state: Running)
//
// The phase is derived afresh from what the operator observes, first match
// wins:
//
//	Stopped      spec.state is Stopped (Progressing is True until the pods are gone)
//	Degraded     a cause that needs someone to act is known: a pod's image cannot
//	             be pulled, it crash-loops or misses a Secret or ConfigMap, pods
//	             cannot be created, a secret cannot be provided, an object cannot be
//	             written; or a service made no progress for spec.progressDeadline
//	Pending      a service's Deployment does not exist yet
//	Running      every service runs its desired, up-to-date, ready replicas
//	Progressing  otherwise: rolling out, scaling, waiting for readiness, or for
//	             what may clear by itself (a node, a claim to bind, containers
//	             being created), named in the conditions
//
// The Ready, Progressing and Degraded conditions carry the cause's reason
// and message.
// +kubebuilder:validation:Enum=Pending;Progressing;Running;Degraded;Stopped
// +kubebuilder:validation:MaxLength=16
type UserDeploymentPhase string

// The app phases.
const (
	UserDeploymentPending     UserDeploymentPhase = "Pending"
	UserDeploymentProgressing UserDeploymentPhase = "Progressing"
	UserDeploymentRunning     UserDeploymentPhase = "Running"
	UserDeploymentDegraded    UserDeploymentPhase = "Degraded"
	UserDeploymentStopped     UserDeploymentPhase = "Stopped"
)

// UserDeploymentStatus is the observed state of an app.
type UserDeploymentStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarises the app's state; see the conditions for the cause.
	// +optional
	Phase UserDeploymentPhase `json:"phase,omitempty"`

	// Ready is "<ready services>/<services>", for display.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Ready string `json:"ready,omitempty"`

	// URLs where the public services are reachable.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=1024
	URLs []string `json:"urls,omitempty"`

	// Services reports each service's replicas.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Services []ServiceStatus `json:"services,omitempty"`

	// Conditions: Ready, Progressing, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// CurrentRevision is the revision of the spec: N of the
	// ControllerRevision <name>.vN that records what its pods run (see
	// spec.revisionHistoryLimit). Numbers only grow, a rollback included.
	// +optional
	CurrentRevision int64 `json:"currentRevision,omitempty"`

	// CurrentRevisionTime is when the spec's revision began to roll out:
	// when it was recorded, or, recorded while the app was Stopped, when
	// the app was started again. spec.rollback counts spec.progressDeadline
	// from it.
	// +optional
	CurrentRevisionTime *metav1.Time `json:"currentRevisionTime,omitempty"`

	// LastRunningRevision is the last revision the whole app ran: every
	// service rolled out to it and ready, the phase Running.
	// spec.rollback: OnDegraded goes back to it.
	// +optional
	LastRunningRevision int64 `json:"lastRunningRevision,omitempty"`

	// RolledBack is set while the services run an earlier revision than
	// the spec's, because the spec's did not become Running within
	// spec.progressDeadline (spec.rollback: OnDegraded). The condition
	// RolledBack says why.
	// +optional
	RolledBack *RolledBack `json:"rolledBack,omitempty"`
}

// RolledBack says which revision the operator rolled back, to which, and when.
type RolledBack struct {
	// FromRevision is the spec's revision, which did not become Running.
	FromRevision int64 `json:"fromRevision"`
	// ToRevision is the revision the services run instead: the last that
	// became Running.
	ToRevision int64 `json:"toRevision"`
	// Time is when the operator rolled back.
	Time metav1.Time `json:"time"`
}

// ServiceStatus reports one service.
type ServiceStatus struct {
	// Name of the service.
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// ReadyReplicas counts pods that are ready.
	ReadyReplicas int32 `json:"readyReplicas"`
	// DesiredReplicas is what the service should have now (0 when stopped).
	DesiredReplicas int32 `json:"desiredReplicas"`
	// Message explains why the service is not ready, from its pods.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
	// LastProgressTime is when the service's rollout started or last had one
	// more replica ready; spec.progressDeadline counts from it. Empty while
	// the service runs its desired replicas, or is stopped.
	// +optional
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`
	// Revision is the revision the service's pods run: the last whose
	// template its workload rolled out completely. It stays the previous
	// one while a rollout is under way.
	// +optional
	Revision int64 `json:"revision,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ud,categories=sched
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.urls[0]`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.state`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.currentRevision`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.spec.services.all(s, size(self.metadata.name) + 1 + size(s.name) <= 63)",message="metadata.name plus '-' plus each service name must fit in 63 characters (objects are named <name>-<service>)"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 50",message="metadata.name must be at most 50 characters"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.restartedAt) || self.spec.restartedAt.all(k, self.spec.services.exists(s, s.name == k))",message="spec.restartedAt names a service that is not in spec.services",fieldPath=".spec.restartedAt"
// +kubebuilder:validation:XValidation:rule="self.spec.services.all(s, !has(s.volumes) || size(s.volumes) == 0 || size(self.metadata.name) + 1 + size(s.name) <= 52)",message="a service with volumes runs as the StatefulSet <name>-<service>, which must fit in 52 characters (its pods' revision label adds 11)"

// UserDeployment is a long-lived multi-service application: a Deployment and
// Service per service, a ConfigMap, secrets by reference, an Ingress for
// public services and NetworkPolicies that isolate it.
type UserDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired app.
	// +required
	Spec UserDeploymentSpec `json:"spec"`

	// Status is the observed app.
	// +optional
	Status UserDeploymentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// UserDeploymentList is a list of UserDeployments.
type UserDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UserDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&UserDeployment{}, &UserDeploymentList{})
}
