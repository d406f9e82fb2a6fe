// Package optionalapi follows, while the operator runs, which of the
// optional APIs it can use the cluster serves (External Secrets,
// cert-manager, Traefik), by watching their CustomResourceDefinitions, and
// reports what the operator makes of them on its status Lease
// (api/operatorstatus).
package optionalapi

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// API is an optional API: a kind of another project that the operator
// creates when the cluster serves it, handled as unstructured so the
// operator needs neither project's Go module.
type API struct {
	// Name is the project's name, as people call it.
	Name string
	// GVK is the version and kind the operator writes.
	GVK schema.GroupVersionKind
	// Resource is the kind's plural: its CRD is <Resource>.<group>.
	Resource string
}

// CRD is the name of the API's CustomResourceDefinition.
func (a API) CRD() string { return a.Resource + "." + a.GVK.Group }

// String is "external-secrets.io/v1 ExternalSecret".
func (a API) String() string { return a.GVK.GroupVersion().String() + " " + a.GVK.Kind }

// The optional APIs the operator knows.
var (
	ExternalSecrets = API{Name: "External Secrets", Resource: "externalsecrets",
		GVK: schema.GroupVersionKind{Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret"}}
	CertManager = API{Name: "cert-manager", Resource: "certificates",
		GVK: schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}}
	Traefik = API{Name: "Traefik", Resource: "ingressroutes",
		GVK: schema.GroupVersionKind{Group: "traefik.io", Version: "v1alpha1", Kind: "IngressRoute"}}

	All = []API{ExternalSecrets, CertManager, Traefik}
)

// The operator reads these three CRDs and no other: RBAC's resourceNames
// hold for get, and for list and watch with a metadata.name field
// selector, which is how the Watcher asks.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch,resourceNames=externalsecrets.external-secrets.io;certificates.cert-manager.io;ingressroutes.traefik.io
