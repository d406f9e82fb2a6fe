// Package userdeployment reconciles UserDeployments: per service a
// Deployment (a StatefulSet with volumes) and a ClusterIP Service, the
// app's ConfigMap, ExternalSecrets for external secret references, an
// Ingress (or a Traefik IngressRoute) and a Certificate for public services
// and a NetworkPolicy, all owned by the UserDeployment so the garbage
// collector removes them with it.
//
// One reconciler, its jobs by file:
//   - controller.go: Reconcile, which reads the app, runs the phases below
//     and patches the status once; its events.
//   - plan.go: the plan, everything the app should consist of, from its
//     spec and the settings; build_<kind>.go builds each kind's object
//     (build_meta.go: the labels and owner every object carries).
//   - privilege.go: services that ask for privilege their namespace does
//     not allow run at zero replicas.
//   - observe.go: what the app owns, from the caches, and its pods.
//   - cpuscheduler.go: placement.cpuScheduler: why pods wait for it, and
//     moving pods off a node it detached from.
//   - apply.go: writes what differs from the plan, with server-side apply,
//     and deletes what the plan no longer has; drift.go decides what
//     differs; trim.go trims the cached objects to what it compares.
//   - hosts.go: who holds an ingress host, between apps and other
//     namespaces' routes; hostrules.go: the hosts a namespace may route;
//     routecache.go: every route of the cluster, by host.
//   - optional.go: External Secrets, Traefik and cert-manager, used while
//     the cluster serves them.
//   - revisions.go: the app's revisions (api/revision), recorded as
//     ControllerRevisions before anything is applied, trimmed to
//     spec.revisionHistoryLimit, and the rollback of spec.rollback:
//     OnDegraded, which has the plan built from an earlier revision.
//   - status.go: the status, a pure function of the plan and what was
//     observed.
//   - watches.go: what wakes the reconciler up.
package userdeployment
