package install

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-sched/kubectl-sched/api/settings"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
)

// annotationConfigHash on the operator's pod template changes with its
// settings, so new settings restart it (it reads them at start).
const annotationConfigHash = schedv1.GroupName + "/config-hash"

// Settings lists every operator setting install writes: each a flag of
// install and of the operator, and the operator's environment variable, a
// key of manifests.ConfigMapName.
var Settings = settings.All

// settingFlags holds the values of the setting flags given.
type settingFlags struct {
	fs     *pflag.FlagSet
	values map[string]*string
	maps   map[string]*[]string
}

func addSettingFlags(fs *pflag.FlagSet) *settingFlags {
	s := &settingFlags{fs: fs, values: map[string]*string{}, maps: map[string]*[]string{}}
	for _, st := range Settings {
		usage := fmt.Sprintf("%s (operator env %s)", st.InstallHelp, st.Env)
		if st.Kind == settings.Map {
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
		if st.Kind != settings.Map {
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

func check(st settings.Setting, k, v string) string {
	if st.Check == nil {
		return ""
	}
	return st.Check(k, v)
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
		if st.Kind != settings.Map {
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
		if o.GetNamespace() == manifests.ManifestSchedulerNamespace {
			o.SetNamespace(schedNS)
		}
		switch o.GetKind() {
		case "Namespace":
			if o.GetName() == manifests.ManifestSchedulerNamespace {
				o.SetName(schedNS)
			}
		case "ValidatingAdmissionPolicy":
			manifests.RenameInExpressions(o, manifests.ManifestSchedulerNamespace, schedNS)
			if o.GetName() == manifests.OperatorManagedPolicy {
				selector := settings["NAMESPACE_SELECTOR"]
				served, err := manifests.SelectorCEL(selector)
				if err != nil {
					return nil, err
				}
				if err := manifests.SetVariables(o, map[string]string{"selector": strconv.Quote(selector), "served": served}); err != nil {
					return nil, fmt.Errorf("the embedded manifests are broken: %w", err)
				}
			}
		case "PriorityClass":
			if !mapped[o.GetName()] {
				continue
			}
		case "ConfigMap":
			if o.GetName() == manifests.ConfigMapName {
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
		if o.GetKind() == "ConfigMap" && o.GetName() == manifests.ConfigMapName {
			data, _, err := unstructured.NestedStringMap(o.Object, "data")
			if err != nil {
				return nil, fmt.Errorf("ConfigMap %s: %w", manifests.ConfigMapName, err)
			}
			for _, st := range Settings {
				if _, ok := data[st.Env]; !ok {
					return nil, fmt.Errorf("ConfigMap %s has no %s", manifests.ConfigMapName, st.Env)
				}
			}
			return data, nil
		}
	}
	return nil, fmt.Errorf("no ConfigMap %s", manifests.ConfigMapName)
}

func settingsHash(settings map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(h, "%s=%s\x00", k, settings[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
