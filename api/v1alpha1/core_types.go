package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Mirrors of core/v1 types that hold lists or maps. A CRD cannot put
// maxItems or maxLength inside an embedded core/v1 type, and a CEL rule
// that walks one of its unbounded lists is refused by the API server's
// cost estimate (the Workflow's 32 steps multiply it). These types have
// the same JSON as their core/v1 originals, with every list, map and
// string bounded; Core converts to the original. Types without lists or
// maps (Toleration, EnvVarSource, LocalObjectReference, SeccompProfile,
// ...) stay core/v1 types with a CEL rule on the field that uses them.

// ResourceRequirements mirrors core/v1 ResourceRequirements: at most 16
// limits and 16 requests, resource names of at most 317 characters (a
// qualified name) and quantities of at most 64. Resource claims are not
// supported: the pod has no resourceClaims for them to name.
type ResourceRequirements struct {
	// Limits is the most of each resource the container may use.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && (type(self[k]) in [int] || size(self[k]) <= 64))",message="resource names may have at most 317 characters and quantities 64"
	Limits corev1.ResourceList `json:"limits,omitempty"`

	// Requests is what the container is guaranteed.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && (type(self[k]) in [int] || size(self[k]) <= 64))",message="resource names may have at most 317 characters and quantities 64"
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// Core is r as core/v1 ResourceRequirements.
func (r ResourceRequirements) Core() corev1.ResourceRequirements {
	c := r.DeepCopy()
	return corev1.ResourceRequirements{Limits: c.Limits, Requests: c.Requests}
}

// SecurityContext mirrors core/v1 SecurityContext with bounded
// capabilities (at most 64 to add and 64 to drop, of at most 64 characters
// each) and strings (see each field).
type SecurityContext struct {
	// Capabilities to add and drop.
	// +optional
	Capabilities *Capabilities `json:"capabilities,omitempty"`
	// Privileged runs the container privileged.
	// +optional
	Privileged *bool `json:"privileged,omitempty"`
	// SELinuxOptions: user, role, type and level of at most 253 characters.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self.?user.orValue('')) <= 253 && size(self.?role.orValue('')) <= 253 && size(self.?type.orValue('')) <= 253 && size(self.?level.orValue('')) <= 253",message="seLinuxOptions fields may have at most 253 characters each"
	SELinuxOptions *corev1.SELinuxOptions `json:"seLinuxOptions,omitempty"`
	// WindowsOptions: names of at most 253 characters (runAsUserName 256),
	// gmsaCredentialSpec of at most 8192.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self.?gmsaCredentialSpecName.orValue('')) <= 253 && size(self.?gmsaCredentialSpec.orValue('')) <= 8192 && size(self.?runAsUserName.orValue('')) <= 256",message="windowsOptions.gmsaCredentialSpecName may have at most 253 characters, gmsaCredentialSpec 8192 and runAsUserName 256"
	WindowsOptions *corev1.WindowsSecurityContextOptions `json:"windowsOptions,omitempty"`
	// RunAsUser is the UID the container runs as.
	// +optional
	RunAsUser *int64 `json:"runAsUser,omitempty"`
	// RunAsGroup is the GID the container runs as.
	// +optional
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`
	// RunAsNonRoot refuses to start a container that would run as root.
	// +optional
	RunAsNonRoot *bool `json:"runAsNonRoot,omitempty"`
	// ReadOnlyRootFilesystem mounts the root filesystem read-only.
	// +optional
	ReadOnlyRootFilesystem *bool `json:"readOnlyRootFilesystem,omitempty"`
	// AllowPrivilegeEscalation lets a process gain more privileges than its parent.
	// +optional
	AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation,omitempty"`
	// ProcMount is Default or Unmasked.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) <= 16",message="procMount may have at most 16 characters"
	ProcMount *corev1.ProcMountType `json:"procMount,omitempty"`
	// SeccompProfile: a type of at most 32 characters and a localhost
	// profile of at most 4096.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self.type) <= 32 && size(self.?localhostProfile.orValue('')) <= 4096",message="seccompProfile.type may have at most 32 characters and localhostProfile 4096"
	SeccompProfile *corev1.SeccompProfile `json:"seccompProfile,omitempty"`
	// AppArmorProfile: a type of at most 32 characters and a localhost
	// profile of at most 4096.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self.type) <= 32 && size(self.?localhostProfile.orValue('')) <= 4096",message="appArmorProfile.type may have at most 32 characters and localhostProfile 4096"
	AppArmorProfile *corev1.AppArmorProfile `json:"appArmorProfile,omitempty"`
}

// Capabilities mirrors core/v1 Capabilities with bounded lists.
type Capabilities struct {
	// Add these capabilities.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(c, size(c) <= 64)",message="capability names may have at most 64 characters"
	Add []corev1.Capability `json:"add,omitempty"`
	// Drop these capabilities.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(c, size(c) <= 64)",message="capability names may have at most 64 characters"
	Drop []corev1.Capability `json:"drop,omitempty"`
}

// Core is s as a core/v1 SecurityContext; nil stays nil.
func (s *SecurityContext) Core() *corev1.SecurityContext {
	if s == nil {
		return nil
	}
	c := s.DeepCopy()
	out := &corev1.SecurityContext{
		Privileged:               c.Privileged,
		SELinuxOptions:           c.SELinuxOptions,
		WindowsOptions:           c.WindowsOptions,
		RunAsUser:                c.RunAsUser,
		RunAsGroup:               c.RunAsGroup,
		RunAsNonRoot:             c.RunAsNonRoot,
		ReadOnlyRootFilesystem:   c.ReadOnlyRootFilesystem,
		AllowPrivilegeEscalation: c.AllowPrivilegeEscalation,
		ProcMount:                c.ProcMount,
		SeccompProfile:           c.SeccompProfile,
		AppArmorProfile:          c.AppArmorProfile,
	}
	if c.Capabilities != nil {
		out.Capabilities = &corev1.Capabilities{Add: c.Capabilities.Add, Drop: c.Capabilities.Drop}
	}
	return out
}

// Probe mirrors core/v1 Probe (its handler inline, as there) with bounded
// exec commands and HTTP headers.
type Probe struct {
	// Exec runs a command in the container.
	// +optional
	Exec *ExecAction `json:"exec,omitempty"`
	// HTTPGet sends an HTTP GET request.
	// +optional
	HTTPGet *HTTPGetAction `json:"httpGet,omitempty"`
	// TCPSocket opens a TCP connection: a host of at most 253 characters, a
	// port name of at most 15.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self.?host.orValue('')) <= 253 && (type(self.port) in [int] || size(self.port) <= 15)",message="tcpSocket.host may have at most 253 characters and a port name 15"
	TCPSocket *corev1.TCPSocketAction `json:"tcpSocket,omitempty"`
	// GRPC calls the gRPC health check: a service name of at most 253
	// characters, a mode of at most 32.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self.?service.orValue('')) <= 253 && size(self.?mode.orValue('')) <= 32",message="grpc.service may have at most 253 characters and mode 32"
	GRPC *corev1.GRPCAction `json:"grpc,omitempty"`
	// InitialDelaySeconds before the first probe.
	// +optional
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
	// TimeoutSeconds of each probe.
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// PeriodSeconds between probes.
	// +optional
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
	// SuccessThreshold: successes in a row that count as passing.
	// +optional
	SuccessThreshold int32 `json:"successThreshold,omitempty"`
	// FailureThreshold: failures in a row that count as failing.
	// +optional
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
	// TerminationGracePeriodSeconds after a failed liveness probe.
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// ExecAction mirrors core/v1 ExecAction: at most 64 arguments of at most
// 4096 characters.
type ExecAction struct {
	// Command to run; not in a shell.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	Command []string `json:"command,omitempty"`
}

// HTTPGetAction mirrors core/v1 HTTPGetAction with bounded strings and at
// most 16 headers.
type HTTPGetAction struct {
	// Path to request.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Path string `json:"path,omitempty"`
	// Port, a number or a port name of at most 15 characters.
	// +kubebuilder:validation:XValidation:rule="type(self) in [int] || size(self) <= 15",message="a port name may have at most 15 characters"
	Port intstr.IntOrString `json:"port"`
	// Host to connect to; the pod's IP when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host,omitempty"`
	// Scheme is HTTP or HTTPS.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) <= 8",message="scheme is HTTP or HTTPS"
	Scheme corev1.URIScheme `json:"scheme,omitempty"`
	// HTTPHeaders to send: at most 16, names of at most 256 characters and
	// values of at most 4096.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(h, size(h.name) <= 256 && size(h.value) <= 4096)",message="HTTP header names may have at most 256 characters and values 4096"
	HTTPHeaders []corev1.HTTPHeader `json:"httpHeaders,omitempty"`
	// Protocol of the probe.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) <= 16",message="protocol may have at most 16 characters"
	Protocol *corev1.HTTPProtocol `json:"protocol,omitempty"`
}

// Core is p as a core/v1 Probe; nil stays nil.
func (p *Probe) Core() *corev1.Probe {
	if p == nil {
		return nil
	}
	c := p.DeepCopy()
	out := &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{TCPSocket: c.TCPSocket, GRPC: c.GRPC},
		InitialDelaySeconds: c.InitialDelaySeconds, TimeoutSeconds: c.TimeoutSeconds, PeriodSeconds: c.PeriodSeconds,
		SuccessThreshold: c.SuccessThreshold, FailureThreshold: c.FailureThreshold,
		TerminationGracePeriodSeconds: c.TerminationGracePeriodSeconds,
	}
	if c.Exec != nil {
		out.Exec = &corev1.ExecAction{Command: c.Exec.Command}
	}
	if h := c.HTTPGet; h != nil {
		out.HTTPGet = &corev1.HTTPGetAction{Path: h.Path, Port: h.Port, Host: h.Host, Scheme: h.Scheme, HTTPHeaders: h.HTTPHeaders, Protocol: h.Protocol}
	}
	return out
}
