package app

// Permissions of the manager itself; each controller declares its own next
// to its Reconcile. `make manifests` turns these into config/rbac/role.yaml.

// Leader election takes a Lease in the operator's own namespace only (a Role,
// not cluster-wide); config/default's namespace transformer renames it.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kubectl-sched-system,resources=leases,verbs=get;list;watch;create;update;patch;delete

// The metrics endpoint asks the API server who a caller is and whether it
// may get /metrics (controller-runtime's WithAuthenticationAndAuthorization).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Events explain what the controllers do, in the namespaces of the objects.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
