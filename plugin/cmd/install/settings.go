package install

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-sched/kubectl-sched/api/secretstore"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// ConfigMapName holds the operator's cluster settings, which its container
// reads as environment variables.
const ConfigMapName = "kubectl-sched-operator-config"

// annotationConfigHash on the operator's pod template changes with its
// settings, so new settings restart it (it reads them at start).
const annotationConfigHash = schedv1.GroupName + "/config-hash"

// Setting is one operator setting: an install flag and the environment
// variable of the operator it becomes, a key of ConfigMapName. The
// operator's own flag has the same name.
type Setting struct {
	Flag, Env, Usage string
	// Map settings take KEY=VALUE, repeatable; KEY= removes a key. They are
	// stored comma-separated.
	Map bool
	// check says what is wrong with a value (or a KEY=VALUE pair), "" when fine.
	check func(key, value string) string
}

// Settings lists every operator setting install writes, in the order of
// `install --help` and the README.
var Settings = []Setting{
	{Flag: "ingress-domain", Env: "INGRESS_DOMAIN", Usage: "Domain of public apps' hosts: <app>.<namespace>.<domain>.", check: dnsName},
	{Flag: "ingress-provider", Env: "INGRESS_PROVIDER", Usage: "ingress (networking.k8s.io/v1 Ingress) or traefik (Traefik IngressRoute, when the cluster serves traefik.io/v1alpha1).", check: oneOf("ingress", "traefik")},
	{Flag: "ingress-class", Env: "INGRESS_CLASS", Usage: "ingressClassName of apps that name none; the cluster's default class when empty."},
	{Flag: "allowed-ingress-classes", Env: "ALLOWED_INGRESS_CLASSES", check: ingressClasses,
		Usage: "Comma-separated ingress classes an app may name in spec.ingress.className besides --ingress-class; none when empty."},
	{Flag: "ingress-namespace", Env: "INGRESS_NAMESPACE", Usage: "Namespace of the ingress controller, which apps' NetworkPolicies admit.", check: optionalLabel},
	{Flag: "monitoring-namespace", Env: "MONITORING_NAMESPACE", Usage: "Namespace of the cluster's Prometheus, which tenant namespaces admit and apps admit on their allowFrom.metricsPorts.", check: optionalLabel},
	{Flag: "network-policies", Env: "NETWORK_POLICIES", Usage: "true isolates apps and tenant namespaces with NetworkPolicies; false on clusters that do not enforce them.", check: oneOf("true", "false")},
	{Flag: "cluster-secret-store", Env: "CLUSTER_SECRET_STORE", Usage: "External Secrets ClusterSecretStore that apps' external secret references read from; none when empty."},
	{Flag: "external-secret-key-template", Env: "EXTERNAL_SECRET_KEY_TEMPLATE", check: keyTemplate,
		Usage: "Prefix every external secret key must start with, {{namespace}} being the namespace, ending in /, so tenants sharing the store read only their own keys; empty allows any key. Also enforced on every ExternalSecret and PushSecret (see --external-secrets-policy)."},
	{Flag: "external-secret-reserved-paths", Env: "EXTERNAL_SECRET_RESERVED_PATHS", check: reservedPaths,
		Usage: "Comma-separated top-level paths of the ClusterSecretStore no namespace's key prefix may cover: its mount (Vault's path, which External Secrets strips from keys that start with it) and folders of shared secrets."},
	{Flag: "cluster-issuer", Env: "CLUSTER_ISSUER", Usage: "cert-manager ClusterIssuer that signs public apps' certificates when cert-manager is installed; no certificates when empty."},
	{Flag: "priority-class", Env: "PRIORITY_CLASSES", Map: true, check: priorityClass,
		Usage: "PRIORITY=CLASS maps placement.priority (Critical, High, Medium, Low) to an existing PriorityClass instead of the kubectl-sched-<priority> one install creates; PRIORITY= leaves it unmapped. Repeatable."},
	{Flag: "scheduler-image", Env: "SCHEDULER_IMAGES", Map: true, check: schedulerImage,
		Usage: "NAME=IMAGE resolves a well-known sched_ext scheduler (scx_lavd) to an image instead of the pinned scx release. Repeatable."},
	{Flag: "allowed-scheduler-registries", Env: "ALLOWED_SCHEDULER_REGISTRIES", check: registries,
		Usage: "Comma-separated registries or repositories (ghcr.io/sched-ext,registry.example.com) a SchedExt's own scheduler.image must come from; any when empty."},
	{Flag: "scheduler-namespace", Env: "SCHEDULER_NAMESPACE", Usage: "Namespace of the SchedExt DaemonSets: install creates it (Pod Security privileged) with the operator's Role for DaemonSets there.", check: label},
	{Flag: "helper-image", Env: "HELPER_IMAGE", Usage: "Image with sh and cat for the SchedExt pods' kernel preflight and attach check (mirror it on air-gapped clusters).", check: nonEmpty},
}

var imageRef = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._/:@-]*$`)

func registries(_, v string) string {
	for _, r := range strings.Split(v, ",") {
		if r = strings.TrimSpace(r); strings.Contains(r, "://") || strings.ContainsAny(r, " @") {
			return fmt.Sprintf("holds %q: give registry hosts or repositories (ghcr.io/sched-ext), comma-separated", r)
		}
	}
	return ""
}

func ingressClasses(_, v string) string {
	for _, c := range strings.Split(v, ",") {
		if c = strings.TrimSpace(c); c != "" && len(validation.IsDNS1123Subdomain(c)) > 0 {
			return fmt.Sprintf("holds %q: give IngressClass names (lower-case DNS names), comma-separated", c)
		}
	}
	return ""
}

func keyTemplate(_, v string) string { return secretstore.TemplateProblem(v) }

func reservedPaths(_, v string) string {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); strings.ContainsAny(p, " '\"\\") || strings.Contains(p, "{{") {
			return fmt.Sprintf("holds %q: give paths of the store (secret,shared), comma-separated", p)
		}
	}
	return ""
}

func nonEmpty(_, v string) string {
	if v == "" {
		return "must not be empty"
	}
	return ""
}

func dnsName(_, v string) string {
	if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
		return "is not a DNS name: " + strings.Join(errs, "; ")
	}
	return ""
}

func label(_, v string) string {
	if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
		return "is not a namespace name: " + strings.Join(errs, "; ")
	}
	return ""
}

func optionalLabel(k, v string) string {
	if v == "" {
		return ""
	}
	return label(k, v)
}

func oneOf(values ...string) func(_, v string) string {
	return func(_, v string) string {
		if !slices.Contains(values, v) {
			return "must be " + strings.Join(values, " or ")
		}
		return ""
	}
}

func priorityClass(k, v string) string {
	if !slices.Contains(schedv1.Priorities, schedv1.Priority(k)) {
		return fmt.Sprintf("%q is not a placement priority (Critical, High, Medium or Low)", k)
	}
	if errs := validation.IsDNS1123Subdomain(v); v != "" && len(errs) > 0 {
		return fmt.Sprintf("%q is not a PriorityClass name", v)
	}
	return ""
}

func schedulerImage(k, v string) string {
	if !slices.Contains(schedv1.WellKnownSchedulers, k) {
		return fmt.Sprintf("%q is not a well-known scheduler (%s); a SchedExt with its own image sets scheduler.image", k, strings.Join(schedv1.WellKnownSchedulers, ", "))
	}
	if v != "" && !imageRef.MatchString(v) {
		return fmt.Sprintf("%q is not an image reference", v)
	}
	return ""
}

// settingFlags holds the values of the setting flags given.
type settingFlags struct {
	fs     *pflag.FlagSet
	values map[string]*string
	maps   map[string]*[]string
}

func addSettingFlags(fs *pflag.FlagSet) *settingFlags {
	s := &settingFlags{fs: fs, values: map[string]*string{}, maps: map[string]*[]string{}}
	for _, st := range Settings {
		usage := fmt.Sprintf("%s (operator env %s)", st.Usage, st.Env)
		if st.Map {
			s.maps[st.Flag] = fs.StringArray(st.Flag, nil, usage)
		} else {
			s.values[st.Flag] = fs.String(st.Flag, "", usage+"; kept from the installed operator when not given.")
		}
	}
	return s
}

// validate checks every setting flag given.
func (s *settingFlags) validate() error {
	for _, st := range Settings {
		if !s.fs.Changed(st.Flag) {
			continue
		}
		if !st.Map {
			if msg := check(st, "", *s.values[st.Flag]); msg != "" {
				return cmdutil.Usage(fmt.Sprintf("See 'kubectl sched install --help' for --%s.", st.Flag), "--%s %q %s", st.Flag, *s.values[st.Flag], msg)
			}
			continue
		}
		for _, kv := range *s.maps[st.Flag] {
			k, v, ok := strings.Cut(kv, "=")
			msg := "is not KEY=VALUE"
			if ok && k != "" {
				msg = check(st, k, v)
			}
			if msg != "" {
				return cmdutil.Usage(fmt.Sprintf("See 'kubectl sched install --help' for --%s.", st.Flag), "--%s %q: %s", st.Flag, kv, msg)
			}
		}
	}
	return nil
}

func check(st Setting, k, v string) string {
	if st.check == nil {
		return ""
	}
	return st.check(k, v)
}

// merge returns the settings to install: base (the manifest's defaults,
// overlaid with what the cluster has) changed by the flags given. Map
// settings change key by key.
func (s *settingFlags) merge(base map[string]string) map[string]string {
	out := maps.Clone(base)
	for _, st := range Settings {
		if !s.fs.Changed(st.Flag) {
			continue
		}
		if !st.Map {
			out[st.Env] = *s.values[st.Flag]
			continue
		}
		m := parseMap(out[st.Env])
		for _, kv := range *s.maps[st.Flag] {
			k, v, _ := strings.Cut(kv, "=")
			if v == "" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		out[st.Env] = formatMap(m)
	}
	return out
}

func parseMap(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// formatMap writes priorities highest first and other keys sorted, so the
// ConfigMap reads naturally and does not change when nothing did.
func formatMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int {
		return rankPriority(a) - rankPriority(b)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func rankPriority(k string) int {
	if i := slices.Index(schedv1.Priorities, schedv1.Priority(k)); i >= 0 {
		return i
	}
	return len(schedv1.Priorities)
}

// configure writes settings into the objects: the ConfigMap's data, the
// hash on the operator's pod template, and only the PriorityClasses the
// priority mapping names (a level mapped to an existing class needs none).
func configure(objs []*unstructured.Unstructured, settings map[string]string) ([]*unstructured.Unstructured, error) {
	mapped := map[string]bool{}
	for _, class := range parseMap(settings["PRIORITY_CLASSES"]) {
		mapped[class] = true
	}
	out := objs[:0:0]
	schedNS := settings["SCHEDULER_NAMESPACE"]
	for _, o := range objs {
		if o.GetNamespace() == ManifestSchedulerNamespace {
			o.SetNamespace(schedNS)
		}
		switch o.GetKind() {
		case "Namespace":
			if o.GetName() == ManifestSchedulerNamespace {
				o.SetName(schedNS)
			}
		case "ValidatingAdmissionPolicy":
			renameInExpressions(o, ManifestSchedulerNamespace, schedNS)
		case "PriorityClass":
			if !mapped[o.GetName()] {
				continue
			}
		case "ConfigMap":
			if o.GetName() == ConfigMapName {
				data := map[string]any{}
				for k, v := range settings {
					data[k] = v
				}
				if err := unstructured.SetNestedField(o.Object, data, "data"); err != nil {
					return nil, err
				}
			}
		case "Deployment":
			if err := unstructured.SetNestedField(o.Object, settingsHash(settings), "spec", "template", "metadata", "annotations", annotationConfigHash); err != nil {
				return nil, err
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// manifestSettings are the defaults config/manager's ConfigMap holds.
func manifestSettings(objs []*unstructured.Unstructured) (map[string]string, error) {
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == ConfigMapName {
			data, _, err := unstructured.NestedStringMap(o.Object, "data")
			if err != nil {
				return nil, fmt.Errorf("ConfigMap %s: %w", ConfigMapName, err)
			}
			for _, st := range Settings {
				if _, ok := data[st.Env]; !ok {
					return nil, fmt.Errorf("ConfigMap %s has no %s", ConfigMapName, st.Env)
				}
			}
			return data, nil
		}
	}
	return nil, fmt.Errorf("no ConfigMap %s", ConfigMapName)
}

func settingsHash(settings map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(h, "%s=%s\x00", k, settings[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
