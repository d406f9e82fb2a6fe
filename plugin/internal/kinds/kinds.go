// Package kinds is the one table of the kinds kubectl sched manages: every
// name a user may type for each, its resource, and a constructor, which the
// commands build their lookups, completions and objects from.
package kinds

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// Kind is one of the kinds kubectl sched manages, with every name a user
// may type for it.
type Kind struct {
	Kind       string // AgentTask
	Singular   string // agenttask
	Plural     string // agenttasks
	Short      string // at
	Namespaced bool
	// Alias is a name the plugin also accepts, with its plural, as its own
	// commands say it (`kubectl sched task run`); kubectl does not know it.
	Alias string
	// New returns an empty object of the kind; NewList its list.
	New     func() client.Object
	NewList func() client.ObjectList
}

// Category is every kind's CRD category: `kubectl get sched` lists them all.
const Category = "sched"

// The kinds, each by its name, for the commands about one of them.
var (
	UserDeployment = Kind{Kind: "UserDeployment", Singular: "userdeployment", Plural: "userdeployments", Short: "ud", Namespaced: true,
		New: func() client.Object { return &schedv1.UserDeployment{} }, NewList: func() client.ObjectList { return &schedv1.UserDeploymentList{} }}
	AgentTask = Kind{Kind: "AgentTask", Singular: "agenttask", Plural: "agenttasks", Short: "at", Namespaced: true, Alias: "task",
		New: func() client.Object { return &schedv1.AgentTask{} }, NewList: func() client.ObjectList { return &schedv1.AgentTaskList{} }}
	Workflow = Kind{Kind: "Workflow", Singular: "workflow", Plural: "workflows", Short: "wf", Namespaced: true,
		New: func() client.Object { return &schedv1.Workflow{} }, NewList: func() client.ObjectList { return &schedv1.WorkflowList{} }}
	CronWorkflow = Kind{Kind: "CronWorkflow", Singular: "cronworkflow", Plural: "cronworkflows", Short: "cwf", Namespaced: true,
		New: func() client.Object { return &schedv1.CronWorkflow{} }, NewList: func() client.ObjectList { return &schedv1.CronWorkflowList{} }}
	WorkflowTemplate = Kind{Kind: "WorkflowTemplate", Singular: "workflowtemplate", Plural: "workflowtemplates", Short: "wft", Namespaced: true,
		New: func() client.Object { return &schedv1.WorkflowTemplate{} }, NewList: func() client.ObjectList { return &schedv1.WorkflowTemplateList{} }}
	ClusterWorkflowTemplate = Kind{Kind: "ClusterWorkflowTemplate", Singular: "clusterworkflowtemplate", Plural: "clusterworkflowtemplates", Short: "cwft", Namespaced: false,
		New: func() client.Object { return &schedv1.ClusterWorkflowTemplate{} }, NewList: func() client.ObjectList { return &schedv1.ClusterWorkflowTemplateList{} }}
	SchedExt = Kind{Kind: "SchedExt", Singular: "schedext", Plural: "schedexts", Short: "scx", Namespaced: false,
		New: func() client.Object { return &schedv1.SchedExt{} }, NewList: func() client.ObjectList { return &schedv1.SchedExtList{} }}
)

// Kinds in the order `get` with no KIND prints them. A test checks them
// against the CRDs (config/crd/bases).
var Kinds = []Kind{UserDeployment, AgentTask, Workflow, CronWorkflow, WorkflowTemplate, ClusterWorkflowTemplate, SchedExt}

// ListNamespace is the namespace a list of this kind covers, as kubectl
// names it in "No resources found in NS namespace.": none across all
// namespaces or for a cluster-scoped kind.
func (k Kind) ListNamespace(ns string, allNamespaces bool) string {
	if allNamespaces || !k.Namespaced {
		return ""
	}
	return ns
}

// GVR is the kind's resource.
func (k Kind) GVR() schema.GroupVersionResource { return schedv1.GroupVersion.WithResource(k.Plural) }

// GVK is the kind.
func (k Kind) GVK() schema.GroupVersionKind { return schedv1.GroupVersion.WithKind(k.Kind) }

// GroupKind prefixes names in multi-kind tables and -o name, as kubectl does.
func (k Kind) GroupKind() schema.GroupKind { return k.GVK().GroupKind() }

// Resource is "agenttasks.sched.kubectl-sched.dev", as kubectl names it in messages.
func (k Kind) Resource() string { return k.Plural + "." + schedv1.GroupName }

// Qualified is "agenttask.sched.kubectl-sched.dev", the prefix of -o name.
func (k Kind) Qualified() string { return k.Singular + "." + schedv1.GroupName }

// What names one object, or the kind in ns, for error messages.
func (k Kind) What(ns, name string) string {
	switch {
	case name != "":
		return fmt.Sprintf("%s %q", k.Resource(), name)
	case k.Namespaced && ns != "":
		return fmt.Sprintf("%s in namespace %q", k.Resource(), ns)
	}
	return k.Resource()
}

// KindNames lists the kinds with their short names, for help and errors.
func KindNames() string {
	parts := make([]string, 0, len(Kinds))
	for _, k := range Kinds {
		parts = append(parts, fmt.Sprintf("%s (%s)", k.Singular, k.Short))
	}
	return strings.Join(parts, ", ")
}

// ByKind finds a kind by its Kind exactly ("AgentTask"), as an object's
// kind field names it.
func ByKind(kind string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return Kind{}, false
}

// Lookup finds a kind by any of its names, case-insensitively, with or
// without the API group ("at", "agenttasks", "AgentTask.sched.kubectl-sched.dev").
func Lookup(name string) (Kind, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimSuffix(n, "."+schedv1.GroupName)
	for _, k := range Kinds {
		if n == k.Singular || n == k.Plural || n == k.Short || n == strings.ToLower(k.Kind) || (k.Alias != "" && (n == k.Alias || n == k.Alias+"s")) {
			return k, true
		}
	}
	return Kind{}, false
}

// ResolveKinds parses a KIND argument: one name, a comma-separated list, or
// "all" for every kind. An unknown name is a usage error listing the kinds.
func ResolveKinds(arg string) ([]Kind, error) {
	if strings.EqualFold(arg, "all") {
		return Kinds, nil
	}
	var out []Kind
	for _, part := range strings.Split(arg, ",") {
		k, ok := Lookup(part)
		if !ok {
			return nil, unknownKind(part)
		}
		if !slices.ContainsFunc(out, func(o Kind) bool { return o.Kind == k.Kind }) {
			out = append(out, k)
		}
	}
	return out, nil
}

func unknownKind(name string) error {
	return cmdutil.Usage("Kinds: "+KindNames()+".", "unknown kind %q", name)
}

// Target is a kind with the names asked for (none: all of that kind).
type Target struct {
	Kind  Kind
	Names []string
}

// ParseArgs reads `KIND [NAME...]`, `KIND,KIND`, or `KIND/NAME...` as
// kubectl does. With no args it returns every kind when allowEmpty is set.
func ParseArgs(args []string, allowEmpty bool) ([]Target, error) {
	if len(args) == 0 {
		if !allowEmpty {
			return nil, cmdutil.Usage("Kinds: "+KindNames()+".", "name a kind")
		}
		targets := make([]Target, 0, len(Kinds))
		for _, k := range Kinds {
			targets = append(targets, Target{Kind: k})
		}
		return targets, nil
	}
	if strings.Contains(args[0], "/") {
		var targets []Target
		for _, a := range args {
			kindName, name, ok := strings.Cut(a, "/")
			if !ok || name == "" {
				return nil, cmdutil.Usage("Give every argument as KIND/NAME, or KIND then NAMEs.", "cannot mix KIND/NAME and NAME arguments: %q", a)
			}
			k, found := Lookup(kindName)
			if !found {
				return nil, unknownKind(kindName)
			}
			i := slices.IndexFunc(targets, func(t Target) bool { return t.Kind.Kind == k.Kind })
			if i < 0 {
				targets = append(targets, Target{Kind: k})
				i = len(targets) - 1
			}
			targets[i].Names = append(targets[i].Names, name)
		}
		return targets, nil
	}
	kinds, err := ResolveKinds(args[0])
	if err != nil {
		return nil, err
	}
	var names []string
	if len(args) > 1 {
		names = args[1:]
	}
	if len(names) > 0 && len(kinds) > 1 {
		return nil, cmdutil.Usage("Name one kind, or use KIND/NAME arguments.", "names need a single kind, got %q", args[0])
	}
	targets := make([]Target, 0, len(kinds))
	for _, k := range kinds {
		targets = append(targets, Target{Kind: k, Names: slices.Clone(names)})
	}
	return targets, nil
}
