package doctor

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Access is one request a command makes, as RBAC checks it.
type Access struct {
	Verb, Group, Resource, Subresource string
	// Cluster: the request is cluster-wide, which a namespace's role
	// cannot grant.
	Cluster bool
	// Self: the request names the namespace itself (tenant list).
	Self bool
}

// String is the request as 'kubectl auth can-i' takes it.
func (a Access) String() string {
	r := a.Resource
	if a.Group != "" {
		r += "." + a.Group
	}
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	s := a.Verb + " " + r
	if a.Cluster {
		s += " (cluster-wide)"
	}
	return s
}

// CommandAccess says whether the user's RBAC allows a command.
type CommandAccess struct {
	Command string `json:"command"`
	Allowed bool   `json:"allowed"`
	// ClusterWide commands need a cluster admin's grant.
	ClusterWide bool `json:"clusterWide,omitempty"`
	// Missing are the requests RBAC denies.
	Missing []string `json:"missing,omitempty"`
}

func sched(verb, resource string) Access {
	return Access{Verb: verb, Group: schedv1.GroupName, Resource: resource}
}

func core(verb, resource string) Access { return Access{Verb: verb, Resource: resource} }

// Commands are the key requests of each command: those that decide
// whether it works, not all it makes. The namespaced ones are what the
// ClusterRole kubectl-sched-tenant grants (config/rbac/user_roles.yaml,
// whose rules hack/test/members derives from the commands' requests).
var Commands = []struct {
	Command string
	Needs   []Access
}{
	{"get", []Access{sched("list", "userdeployments"), sched("list", "agenttasks"), sched("list", "workflows")}},
	{"describe", []Access{sched("get", "userdeployments"), core("list", "pods"), core("list", "events")}},
	{"deploy", []Access{sched("patch", "userdeployments"), core("patch", "secrets")}},
	{"stop/start/restart", []Access{sched("patch", "userdeployments")}},
	{"scale/set", []Access{sched("get", "userdeployments"), sched("patch", "userdeployments")}},
	{"history", []Access{sched("get", "userdeployments"), {Verb: "list", Group: "apps", Resource: "controllerrevisions"}}},
	{"rollback", []Access{sched("patch", "userdeployments"), {Verb: "list", Group: "apps", Resource: "controllerrevisions"}}},
	{"delete", []Access{sched("delete", "userdeployments"), sched("delete", "agenttasks"), sched("delete", "workflows")}},
	{"logs", []Access{core("list", "pods"), {Verb: "get", Resource: "pods", Subresource: "log"}}},
	{"task run", []Access{sched("create", "agenttasks")}},
	{"task logs", []Access{sched("get", "agenttasks"), {Verb: "get", Resource: "pods", Subresource: "log"}}},
	{"workflow run", []Access{sched("create", "workflows")}},
	{"workflow watch", []Access{sched("watch", "workflows")}},
	{"workflow retry", []Access{sched("create", "workflows")}},
	{"workflow schedule", []Access{sched("patch", "cronworkflows"), sched("create", "workflows")}},
	{"workflow trigger", []Access{sched("get", "cronworkflows"), sched("create", "workflows")}},
	{"template list", []Access{core("list", "configmaps")}},
	{"tenant list", []Access{{Verb: "get", Resource: "namespaces", Self: true}, core("list", "resourcequotas")}},
	{"schedext", []Access{{Verb: "list", Group: schedv1.GroupName, Resource: "schedexts", Cluster: true}}},
	{"tenant create", []Access{{Verb: "create", Resource: "namespaces", Cluster: true}}},
	{"install", []Access{{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Cluster: true}}},
}

// rbac asks the API server, with a SelfSubjectAccessReview per request,
// which commands the user may run in ns.
func (d *doctor) rbac(ctx context.Context, ns string) ([]CommandAccess, Check) {
	allowed := map[Access]bool{}
	var rows []CommandAccess
	for _, cmd := range Commands {
		row := CommandAccess{Command: cmd.Command, Allowed: true}
		for _, a := range cmd.Needs {
			ok, seen := allowed[a]
			if !seen {
				attrs := &authorizationv1.ResourceAttributes{Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource}
				if !a.Cluster {
					attrs.Namespace = ns
				}
				if a.Self {
					attrs.Name = ns
				}
				r, err := d.c.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
					&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
				if err != nil {
					return nil, skipped(checkRBAC, err, "create", "selfsubjectaccessreviews.authorization.k8s.io")
				}
				ok = r.Status.Allowed
				allowed[a] = ok
			}
			if a.Cluster {
				row.ClusterWide = true
			}
			if !ok {
				row.Allowed = false
				row.Missing = append(row.Missing, a.String())
			}
		}
		rows = append(rows, row)
	}
	return rows, rbacStatus(ns, rows)
}

// rbacStatus: a namespaced command denied warns, with whom to ask; the
// cluster-wide ones are for cluster admins and only listed.
func rbacStatus(ns string, rows []CommandAccess) Check {
	c := Check{Name: checkRBAC, Status: OK}
	allowed, deniedHere := 0, 0
	for _, r := range rows {
		state := "allowed"
		line := r.Command
		if r.Allowed {
			allowed++
		} else {
			state = "denied"
			line += ": needs " + strings.Join(r.Missing, ", ")
			if !r.ClusterWide {
				deniedHere++
			}
		}
		c.Details = append(c.Details, fmt.Sprintf("%-7s %s", state, line))
	}
	c.Message = fmt.Sprintf("%d of %d commands allowed in namespace %s", allowed, len(rows), ns)
	if deniedHere > 0 {
		c.Status = Warn
		c.Message += fmt.Sprintf("; %d denied there", deniedHere)
		c.Fix = fmt.Sprintf("ask an admin of namespace %s to bind you to the ClusterRole kubectl-sched-tenant ('kubectl sched tenant create' binds a tenant's members)", ns)
	}
	return c
}
