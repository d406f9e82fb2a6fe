package app

// Permissions of the manager itself; each controller declares its own next
// to its Reconcile. `make manifests` turns these into config/rbac/role.yaml.

// Leader election takes a Lease; events explain what the controllers do.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
