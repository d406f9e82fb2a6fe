// Package manifests is the kubectl-sched installation as config/ holds it,
// embedded in the plugin: read in apply order with the operator's
// namespace and image substituted, and the names install and doctor look
// for in it.
package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/config"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// The names the manifests in config/ use, which install substitutes.
const (
	// ManifestNamespace is the operator's namespace in config/.
	ManifestNamespace = schedv1.DefaultOperatorNamespace
	// ManifestSchedulerNamespace is the SchedExt DaemonSets' namespace in
	// config/rbac; the SCHEDULER_NAMESPACE setting renames it.
	ManifestSchedulerNamespace = schedv1.DefaultSchedulerNamespace
	// ManifestImage is the operator image placeholder in config/manager;
	// kustomize's images: replaces it the same way.
	ManifestImage = "operator"
	// ImageRepository is where released operator images are.
	ImageRepository = "ghcr.io/kubectl-sched/operator"
	// VersionLabel is where install writes the version of what it applies.
	VersionLabel = "app.kubernetes.io/version"
	// OperatorLabel selects the operator's Deployment; its VersionLabel
	// is the operator version.
	OperatorLabel = "app.kubernetes.io/name=kubectl-sched-operator"
	// ConfigMapName holds the operator's cluster settings, which its
	// container reads as environment variables.
	ConfigMapName = "kubectl-sched-operator-config"
)

// manifestDirs are the embedded folders, as config/default lists them.
var manifestDirs = []string{"crd/bases", "policy", "rbac", "manager"}

// clusterScoped are the cluster-scoped kinds the manifests hold; every
// other kind is namespaced.
var clusterScoped = map[string]bool{"CustomResourceDefinition": true, "Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true, "PriorityClass": true}

// applyOrder puts what others need first: CRDs and the namespace, then
// identity and rights, then the workload. Uninstall goes the other way.
var applyOrder = []string{"CustomResourceDefinition", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "Namespace", "PriorityClass", "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding", "ConfigMap", "Service", "Deployment"}

// Objects reads the embedded manifests in apply order, with the operator's
// namespace and image substituted. version labels the Deployment, where
// `kubectl sched version` reads it.
func Objects(image, namespace, version string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, dir := range manifestDirs {
		entries, err := fs.ReadDir(config.Manifests, dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() || e.Name() == "kustomization.yaml" || !strings.HasSuffix(e.Name(), ".yaml") {
				continue
			}
			file := path.Join(dir, e.Name())
			read, err := decodeFile(file)
			if err != nil {
				return nil, err
			}
			objs = append(objs, read...)
		}
	}
	for _, o := range objs {
		if err := substitute(o, image, namespace, version); err != nil {
			return nil, err
		}
	}
	SortForApply(objs)
	return objs, nil
}

// SortForApply puts objs in apply order, keeping the order of objects of
// one kind.
func SortForApply(objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return Rank(a) - Rank(b) })
}

// Rank is o's place in apply order.
func Rank(o *unstructured.Unstructured) int {
	if i := slices.Index(applyOrder, o.GetKind()); i >= 0 {
		return i
	}
	return len(applyOrder)
}

func decodeFile(file string) ([]*unstructured.Unstructured, error) {
	f, err := config.Manifests.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("config/%s: %w", file, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		// Unstructured's own decoding keeps integers as int64.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("config/%s: %w", file, err)
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("config/%s: a document lacks apiVersion, kind or metadata.name", file)
		}
		out = append(out, u)
	}
}

// substitute points the object at namespace and image, as config/default's
// kustomization does with its namespace and images fields.
func substitute(o *unstructured.Unstructured, image, namespace, version string) error {
	switch {
	case !Namespaced(o.GroupVersionKind()):
		o.SetNamespace("")
	case o.GetNamespace() != ManifestSchedulerNamespace: // renamed by configure
		o.SetNamespace(namespace)
	}
	switch o.GetKind() {
	case "Namespace":
		if o.GetName() == ManifestNamespace {
			o.SetName(namespace)
		}
	case "ValidatingAdmissionPolicy":
		RenameInExpressions(o, ManifestNamespace, namespace)
	case "ClusterRoleBinding", "RoleBinding":
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" && m["namespace"] == ManifestNamespace {
				m["namespace"] = namespace
			}
		}
		if subjects != nil {
			if err := unstructured.SetNestedSlice(o.Object, subjects, "subjects"); err != nil {
				return err
			}
		}
	case "ValidatingAdmissionPolicyBinding":
		// Policies that read the operator's settings take its ConfigMap
		// as params, wherever the operator runs.
		if ns, found, _ := unstructured.NestedString(o.Object, "spec", "paramRef", "namespace"); found && ns == ManifestNamespace {
			if err := unstructured.SetNestedField(o.Object, namespace, "spec", "paramRef", "namespace"); err != nil {
				return err
			}
		}
	case "Deployment":
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if m, ok := c.(map[string]any); ok && m["image"] == ManifestImage {
				SetOperatorImage(m, image)
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			return err
		}
		if l := o.GetLabels(); l != nil {
			if _, ok := l[VersionLabel]; ok {
				l[VersionLabel] = version
				o.SetLabels(l)
			}
		}
	}
	return nil
}

// externalSecretsPolicyFile is the admission policy that confines every
// ExternalSecret and PushSecret to its namespace's part of a shared store;
// install adds it when External Secrets is served.
const externalSecretsPolicyFile = "policy/optional/external_secret_keys.yaml"

// ExternalSecretsPolicy reads that policy and its binding with the key
// template and the reserved paths written into the policy's variables
// keyTemplate and reservedPaths, as CEL literals.
func ExternalSecretsPolicy(template string, reserved []string) ([]*unstructured.Unstructured, error) {
	objs, err := decodeFile(externalSecretsPolicyFile)
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(reserved))
	for _, r := range reserved {
		paths = append(paths, strconv.Quote(r))
	}
	values := map[string]string{"keyTemplate": strconv.Quote(template), "reservedPaths": "[" + strings.Join(paths, ", ") + "]"}
	for _, o := range objs {
		if o.GetKind() != "ValidatingAdmissionPolicy" {
			continue
		}
		if err := SetVariables(o, values); err != nil {
			return nil, fmt.Errorf("config/%s: %w", externalSecretsPolicyFile, err)
		}
	}
	return objs, nil
}

// OperatorManagedPolicy holds the operator's account to what it manages in
// the namespaces it serves; install writes NAMESPACE_SELECTOR into its
// variables selector and served.
const OperatorManagedPolicy = "kubectl-sched-operator-managed"

// servedVariable is the policy's map of the request namespace's labels,
// which SelectorCEL's expression reads.
const servedVariable = "variables.nsLabels"

// SelectorCEL is a label selector, as the operator reads it (labels.Parse),
// as a CEL expression over the map variables.nsLabels that matches the
// same label sets: "true" for the empty selector, which selects every
// namespace. Each requirement is held as labels.Requirement.Matches holds
// it: notin and != match a namespace without the key; > and < only a
// value of at most 18 digits, which CEL's int() takes without overflow
// (a namespace whose label has more is not served).
func SelectorCEL(selector string) (string, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return "", fmt.Errorf("--namespace-selector %q is not a label selector: %w", selector, err)
	}
	reqs, _ := sel.Requirements()
	if len(reqs) == 0 {
		return "true", nil
	}
	m := servedVariable
	parts := make([]string, 0, len(reqs))
	for _, r := range reqs {
		key := strconv.Quote(r.Key())
		values := r.ValuesUnsorted()
		slices.Sort(values)
		quoted := make([]string, 0, len(values))
		for _, v := range values {
			quoted = append(quoted, strconv.Quote(v))
		}
		list := "[" + strings.Join(quoted, ", ") + "]"
		var e string
		switch r.Operator() {
		case selection.Exists:
			e = fmt.Sprintf("%s in %s", key, m)
		case selection.DoesNotExist:
			e = fmt.Sprintf("!(%s in %s)", key, m)
		case selection.Equals, selection.DoubleEquals, selection.In:
			e = fmt.Sprintf("%s in %s && %s[%s] in %s", key, m, m, key, list)
		case selection.NotEquals, selection.NotIn:
			e = fmt.Sprintf("!(%s in %s) || !(%s[%s] in %s)", key, m, m, key, list)
		case selection.GreaterThan, selection.LessThan:
			if len(values) != 1 {
				return "", fmt.Errorf("--namespace-selector %q: %s needs one value", selector, r.Operator())
			}
			n, err := strconv.ParseInt(values[0], 10, 64)
			if err != nil {
				return "", fmt.Errorf("--namespace-selector %q: %s needs a whole number: %w", selector, r.Operator(), err)
			}
			op := ">"
			if r.Operator() == selection.LessThan {
				op = "<"
			}
			e = fmt.Sprintf("%s in %s && %s[%s].matches('^[0-9]{1,18}$') && int(%s[%s]) %s %d", key, m, m, key, m, key, op, n)
		default:
			return "", fmt.Errorf("--namespace-selector %q: operator %s is not supported", selector, r.Operator())
		}
		parts = append(parts, "("+e+")")
	}
	return strings.Join(parts, " && "), nil
}

// SetVariables writes CEL expressions into the variables of the same names
// of the policy o; every name must be there.
func SetVariables(o *unstructured.Unstructured, values map[string]string) error {
	vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "variables")
	set := 0
	for _, v := range vars {
		if m, ok := v.(map[string]any); ok {
			if e, ok := values[fmt.Sprint(m["name"])]; ok {
				m["expression"] = e
				set++
			}
		}
	}
	if set != len(values) {
		names := slices.Sorted(maps.Keys(values))
		return fmt.Errorf("policy %s lacks one of the variables %s", o.GetName(), strings.Join(names, ", "))
	}
	return unstructured.SetNestedSlice(o.Object, vars, "spec", "variables")
}

// RenameInExpressions points an admission policy's CEL at namespace where it
// names the manifests' namespace from: as a quoted literal ('from') and in
// a service account's user name (system:serviceaccount:from:...).
// Namespace names are DNS labels, so the replacement needs no escaping.
func RenameInExpressions(o *unstructured.Unstructured, from, to string) {
	r := strings.NewReplacer("'"+from+"'", "'"+to+"'", "system:serviceaccount:"+from+":", "system:serviceaccount:"+to+":")
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return r.Replace(x)
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	if spec, ok := o.Object["spec"]; ok {
		o.Object["spec"] = walk(spec)
	}
}

// Namespaced reports whether objects of gvk live in a namespace.
func Namespaced(gvk schema.GroupVersionKind) bool { return !clusterScoped[gvk.Kind] }

// Resource is the API resource of gvk. The manifests hold only built-in
// kinds whose plural is the regular one, so no discovery is needed.
func Resource(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural
}

// Qualified is kubectl's name for an object in messages:
// "customresourcedefinition.apiextensions.k8s.io/agenttasks.sched.kubectl-sched.dev".
func Qualified(o *unstructured.Unstructured) string {
	gk := o.GroupVersionKind().GroupKind()
	return strings.ToLower(gk.String()) + "/" + o.GetName()
}

// DefaultImage is the released operator image matching this plugin's
// version. A development build, which has no release version, installs
// the release config/manager pins (config.OperatorImage), never :latest:
// a tag anyone can move is not a version anyone chose.
func DefaultImage(pluginVersion string) string {
	if strings.HasPrefix(pluginVersion, "v") && len(validation.IsValidLabelValue(pluginVersion)) == 0 {
		return ImageRepository + ":" + pluginVersion
	}
	img, err := config.OperatorImage()
	if err != nil {
		panic(err) // the embedded manifests are checked by config's tests
	}
	return img
}

// VersionOf is the version label for image: its tag, else the plugin's
// version, made a valid label value.
func VersionOf(image, pluginVersion string) string {
	v := pluginVersion
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") && !strings.Contains(image, "@") {
		v = image[i+1:]
	}
	b := []byte(v)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	v = strings.Trim(string(b[:min(len(b), validation.LabelValueMaxLength)]), "-_.")
	if v == "" {
		return "unknown"
	}
	return v
}

// ExternalSecretsServed reports whether the cluster serves External
// Secrets' ExternalSecrets, in any version.
func ExternalSecretsServed(d discovery.DiscoveryInterface) (bool, error) {
	groups, err := d.ServerGroups()
	if err != nil {
		return false, cmdutil.API(err, "list", "the API groups")
	}
	for _, g := range groups.Groups {
		if g.Name != externalSecretsGroup {
			continue
		}
		for _, v := range g.Versions {
			resources, err := d.ServerResourcesForGroupVersion(v.GroupVersion)
			if err != nil {
				return false, cmdutil.API(err, "get", "the resources of "+v.GroupVersion)
			}
			if slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "externalsecrets" }) {
				return true, nil
			}
		}
	}
	return false, nil
}

const externalSecretsGroup = "external-secrets.io"

// OperatorImageEnv is the operator container's variable that names its
// own image: the default tools image (settings' tools-image) of the
// helpers it adds to tasks' pods.
const OperatorImageEnv = "OPERATOR_IMAGE"

// SetOperatorImage sets the operator container c's image, and the
// variable that tells the operator its image.
func SetOperatorImage(c map[string]any, image string) {
	c["image"] = image
	env, _ := c["env"].([]any)
	for _, e := range env {
		if m, ok := e.(map[string]any); ok && m["name"] == OperatorImageEnv {
			m["value"] = image
			return
		}
	}
	c["env"] = append(env, map[string]any{"name": OperatorImageEnv, "value": image})
}
