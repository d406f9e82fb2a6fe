package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/yaml"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/config"
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
	versionLabel    = "app.kubernetes.io/version"
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
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	return objs, nil
}

func rank(o *unstructured.Unstructured) int {
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
		// Policies name the operator's account exactly, namespace and all.
		o.Object = renameAccount(o.Object, namespace).(map[string]any)
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
	case "Deployment":
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if m, ok := c.(map[string]any); ok && m["image"] == ManifestImage {
				m["image"] = image
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			return err
		}
		if l := o.GetLabels(); l != nil {
			if _, ok := l[versionLabel]; ok {
				l[versionLabel] = version
				o.SetLabels(l)
			}
		}
	}
	return nil
}

// manifestAccounts prefixes the operator's service account name, and its
// namespace's others, in the manifests' policy expressions.
const manifestAccounts = "system:serviceaccount:" + ManifestNamespace + ":"

// renameAccount replaces manifestAccounts in every string of v by the
// prefix of the accounts of namespace.
func renameAccount(v any, namespace string) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, manifestAccounts, "system:serviceaccount:"+namespace+":")
	case map[string]any:
		for k, e := range v {
			v[k] = renameAccount(e, namespace)
		}
	case []any:
		for i, e := range v {
			v[i] = renameAccount(e, namespace)
		}
	}
	return v
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
// version, or :latest for a development build.
func DefaultImage(pluginVersion string) string {
	tag := "latest"
	if strings.HasPrefix(pluginVersion, "v") && len(validation.IsValidLabelValue(pluginVersion)) == 0 {
		tag = pluginVersion
	}
	return ImageRepository + ":" + tag
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
