package install_test

import (
	"context"
	"flag"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/settings"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
)

// TestSettingsAreOperatorSettings: every setting install writes is read by
// the operator under that environment variable, from a flag of that name,
// and every cluster setting the operator reads from the environment can be
// set at install.
func TestSettingsAreOperatorSettings(t *testing.T) {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	opts := app.DefaultOptions()
	opts.BindFlags(fs)
	envOf := regexp.MustCompile(`\(env ([A-Z_]+)`)
	operator := map[string]string{} // env -> flag
	fs.VisitAll(func(f *flag.Flag) {
		if m := envOf.FindStringSubmatch(f.Usage); m != nil {
			operator[m[1]] = f.Name
		}
	})
	// A per-pod value, not a cluster setting.
	delete(operator, "POD_NAMESPACE")
	installed := map[string]string{}
	for _, s := range settings.All {
		installed[s.Env] = s.Flag
	}
	if diff := cmp.Diff(operator, installed); diff != "" {
		t.Errorf("operator settings (env -> flag) differ from install's (-operator +install):\n%s", diff)
	}
}

func settingsOf(t *testing.T, objs []*unstructured.Unstructured) (map[string]string, string, []string) {
	t.Helper()
	var data map[string]string
	var hash string
	var classes []string
	for _, o := range objs {
		switch o.GetKind() {
		case "ConfigMap":
			if o.GetName() == manifests.ConfigMapName {
				data, _, _ = unstructured.NestedStringMap(o.Object, "data")
			}
		case "Deployment":
			var dep appsv1.Deployment
			if err := fromUnstructured(o, &dep); err != nil {
				t.Fatal(err)
			}
			hash = dep.Spec.Template.Annotations["sched.kubectl-sched.dev/config-hash"]
			if envFrom := dep.Spec.Template.Spec.Containers[0].EnvFrom; len(envFrom) != 1 || envFrom[0].ConfigMapRef == nil || envFrom[0].ConfigMapRef.Name != manifests.ConfigMapName {
				t.Errorf("the operator does not read its settings from the ConfigMap: envFrom %+v", envFrom)
			}
			for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
				if strings.HasPrefix(a, "--helper-image") || strings.HasPrefix(a, "--ingress") {
					t.Errorf("arg %s would win over the ConfigMap", a)
				}
			}
		case "PriorityClass":
			classes = append(classes, o.GetName())
		}
	}
	return data, hash, classes
}

func TestInstallSettingsDryRun(t *testing.T) {
	res := plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-o", "yaml")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	defaults, defaultHash, classes := settingsOf(t, decodeAll(t, strings.NewReader(res.Stdout)))
	if defaults["INGRESS_DOMAIN"] != "apps.example.com" || defaults["PRIORITY_CLASSES"] != "Critical=kubectl-sched-critical,High=kubectl-sched-high,Medium=kubectl-sched-medium,Low=kubectl-sched-low" {
		t.Errorf("default settings %v", defaults)
	}
	if diff := cmp.Diff([]string{"kubectl-sched-critical", "kubectl-sched-high", "kubectl-sched-medium", "kubectl-sched-low"}, classes); diff != "" {
		t.Errorf("priority classes (-want +got):\n%s", diff)
	}
	// The operator starts on the defaults, and maps every priority.
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	opts := app.DefaultOptions()
	opts.BindFlags(fs)
	if err := opts.ApplyEnv(fs, func(k string) (string, bool) { v, ok := defaults[k]; return v, ok }); err != nil {
		t.Fatalf("the operator refuses the default settings: %v", err)
	}
	if len(opts.Settings.PriorityClasses) != 4 || opts.Settings.HelperImage != "busybox:1.37" || opts.Settings.ExternalSecretKeyTemplate != "{{namespace}}/" || !slices.Equal(opts.Settings.ExternalSecretReservedPaths, []string{"secret"}) || !opts.Settings.NetworkPolicies || opts.Settings.SchedulerImages["scx_lavd"] != app.SchedulerImage {
		t.Errorf("operator settings from the defaults %+v", opts.Settings)
	}

	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-o", "yaml",
		"--ingress-domain", "apps.example.org", "--ingress-class", "nginx", "--ingress-provider", "traefik",
		"--ingress-namespace", "traefik", "--network-policies", "false", "--monitoring-namespace", "prometheus",
		"--cluster-secret-store", "vault", "--cluster-issuer", "letsencrypt-prod",
		"--external-secret-key-template", "teams/{{namespace}}/", "--external-secret-reserved-paths", "kv,shared",
		"--priority-class", "High=business-critical", "--priority-class", "Low=",
		"--scheduler-image", "scx_lavd=registry.example.org/scx:v1.0.14",
		"--scheduler-namespace", "schedulers", "--helper-image", "registry.example.org/busybox:1.37",
		"--tools-image", "registry.example.org/kubectl-sched/operator:v1",
		"--allowed-scheduler-registries", "ghcr.io/sched-ext,registry.example.org",
		"--allowed-ingress-classes", "internal, nginx-public",
		"--allowed-pod-annotation-domains", "example.com,istio.io",
		"--namespace-selector", "sched.kubectl-sched.dev/tier", "--default-ttl", "24h", "--succeeded-pod-retention", "0",
		"--forbid-self-approval", "true",
		"--kube-api-qps", "150", "--kube-api-burst", "300", "--max-concurrent-reconciles", "15",
		"--controller-workers", "workflow=30", "--controller-workers", "agenttask=40", "--namespace-fairness", "false")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	got, hash, classes := settingsOf(t, decodeAll(t, strings.NewReader(res.Stdout)))
	want := map[string]string{
		"INGRESS_DOMAIN": "apps.example.org", "INGRESS_CLASS": "nginx", "INGRESS_PROVIDER": "traefik",
		"INGRESS_NAMESPACE": "traefik", "NETWORK_POLICIES": "false", "MONITORING_NAMESPACE": "prometheus",
		"CLUSTER_SECRET_STORE": "vault", "CLUSTER_ISSUER": "letsencrypt-prod",
		"EXTERNAL_SECRET_KEY_TEMPLATE": "teams/{{namespace}}/", "EXTERNAL_SECRET_RESERVED_PATHS": "kv,shared",
		"PRIORITY_CLASSES":    "Critical=kubectl-sched-critical,High=business-critical,Medium=kubectl-sched-medium",
		"SCHEDULER_IMAGES":    "scx_lavd=registry.example.org/scx:v1.0.14",
		"SCHEDULER_NAMESPACE": "schedulers", "HELPER_IMAGE": "registry.example.org/busybox:1.37",
		"TOOLS_IMAGE":                    "registry.example.org/kubectl-sched/operator:v1",
		"ALLOWED_SCHEDULER_REGISTRIES":   "ghcr.io/sched-ext,registry.example.org",
		"ALLOWED_INGRESS_CLASSES":        "internal, nginx-public",
		"ALLOWED_POD_ANNOTATION_DOMAINS": "example.com,istio.io",
		"NAMESPACE_SELECTOR":             "sched.kubectl-sched.dev/tier", "DEFAULT_TTL": "24h", "SUCCEEDED_POD_RETENTION": "0",
		"FORBID_SELF_APPROVAL": "true",
		"KUBE_API_QPS":         "150", "KUBE_API_BURST": "300", "MAX_CONCURRENT_RECONCILES": "15",
		"CONTROLLER_WORKERS": "agenttask=40,workflow=30", "NAMESPACE_FAIRNESS": "false",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if hash == "" || hash == defaultHash {
		t.Errorf("config hash %q does not change with the settings (default %q)", hash, defaultHash)
	}
	// High maps to an existing class and Low to none: neither is created.
	if diff := cmp.Diff([]string{"kubectl-sched-critical", "kubectl-sched-medium"}, classes); diff != "" {
		t.Errorf("priority classes (-want +got):\n%s", diff)
	}

	// What the operator makes of them.
	fs = flag.NewFlagSet("operator", flag.ContinueOnError)
	opts = app.DefaultOptions()
	opts.BindFlags(fs)
	if err := opts.ApplyEnv(fs, func(k string) (string, bool) { v, ok := got[k]; return v, ok }); err != nil {
		t.Fatalf("the operator refuses the installed settings: %v", err)
	}
	s := opts.Settings
	if s.IngressDomain != "apps.example.org" || s.ClusterIssuer != "letsencrypt-prod" || s.PriorityClasses["High"] != "business-critical" || s.SchedulerImages["scx_lavd"] != "registry.example.org/scx:v1.0.14" || s.NetworkPolicies {
		t.Errorf("operator settings %+v", s)
	}
	if s.NamespaceFairness {
		t.Errorf("--namespace-fairness false installed, and the operator reads %v", s.NamespaceFairness)
	}
	if s.MonitoringNamespace != "prometheus" {
		t.Errorf("monitoring namespace %q", s.MonitoringNamespace)
	}
	if !slices.Equal(s.AllowedSchedulerRegistries, []string{"ghcr.io/sched-ext", "registry.example.org"}) {
		t.Errorf("allowed registries %v", s.AllowedSchedulerRegistries)
	}
	if !slices.Equal(s.AllowedIngressClasses, []string{"internal", "nginx-public"}) {
		t.Errorf("allowed ingress classes %v", s.AllowedIngressClasses)
	}
	if _, ok := s.PriorityClasses["Low"]; ok {
		t.Errorf("Low is mapped: %v", s.PriorityClasses)
	}
	if s.NamespaceSelector != "sched.kubectl-sched.dev/tier" || s.DefaultTTL != 24*time.Hour || s.SucceededPodRetention != 0 ||
		s.KubeAPIQPS != 150 || s.KubeAPIBurst != 300 || opts.Workers("workflow") != 30 || opts.Workers("agenttask") != 40 || opts.Workers("tenant") != 15 {
		t.Errorf("scale settings %+v", s)
	}
}

func TestInstallSettingsRefused(t *testing.T) {
	for name, args := range map[string][]string{
		"provider":          {"--ingress-provider", "nginx"},
		"domain":            {"--ingress-domain", "Apps_Example"},
		"priority level":    {"--priority-class", "Urgent=x"},
		"not key=value":     {"--priority-class", "High"},
		"scheduler":         {"--scheduler-image", "scx_nope=r/x:1"},
		"network bool":      {"--network-policies", "maybe"},
		"empty namespace":   {"--scheduler-namespace", ""},
		"registry URL":      {"--allowed-scheduler-registries", "https://ghcr.io"},
		"ingress class":     {"--allowed-ingress-classes", "nginx,Public_LB"},
		"annotation domain": {"--allowed-pod-annotation-domains", "example.com,https://istio.io"},
		"selector":          {"--namespace-selector", "tier in (free"},
		"days":              {"--default-ttl", "7d"},
		"retention":         {"--succeeded-pod-retention", "-1m"},
		"qps":               {"--kube-api-qps", "0"},
		"burst":             {"--kube-api-burst", "many"},
		"workers":           {"--max-concurrent-reconciles", "0"},
		"controller":        {"--controller-workers", "workflows=3"},
		"fairness bool":     {"--namespace-fairness", "yes"},
	} {
		t.Run(name, func(t *testing.T) {
			res := plugintest.RunWithInput("", append([]string{"install", "--pin-image=false", "--dry-run=client"}, args...)...)
			if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, "--"+strings.TrimPrefix(args[0], "--")) {
				t.Errorf("exit %d, stderr:\n%s", res.Code, res.Stderr)
			}
		})
	}
}

// installedSettings reads the ConfigMap and the hash on the operator's pods.
func installedSettings(t *testing.T) (map[string]string, string) {
	t.Helper()
	ctx := context.Background()
	var cm corev1.ConfigMap
	if err := bareClient.Get(ctx, client.ObjectKey{Namespace: "kubectl-sched-system", Name: manifests.ConfigMapName}, &cm); err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := bareClient.Get(ctx, client.ObjectKey{Namespace: "kubectl-sched-system", Name: "kubectl-sched-operator"}, &dep); err != nil {
		t.Fatal(err)
	}
	return cm.Data, dep.Spec.Template.Annotations["sched.kubectl-sched.dev/config-hash"]
}

func checkPriorityClasses(t *testing.T, want map[string]int32) {
	t.Helper()
	for _, name := range []string{"kubectl-sched-critical", "kubectl-sched-high", "kubectl-sched-medium", "kubectl-sched-low"} {
		var pc schedulingv1.PriorityClass
		err := bareClient.Get(context.Background(), client.ObjectKey{Name: name}, &pc)
		v, wanted := want[name]
		switch {
		case !wanted && !apierrors.IsNotFound(err):
			t.Errorf("PriorityClass %s: %v, want none", name, err)
		case wanted && err != nil:
			t.Errorf("PriorityClass %s: %v", name, err)
		case wanted && pc.Value != v:
			t.Errorf("PriorityClass %s value %d, want %d", name, pc.Value, v)
		}
	}
}
