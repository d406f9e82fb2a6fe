package install_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/config"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/install"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
)

// A bare API server: no CRDs, as a fresh cluster before install.
var (
	bare       *envtest.Environment
	bareClient client.Client
	kubeconfig string
	nobody     string
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	bin, err := cluster.BinDir(context.Background(), os.Stderr)
	if err != nil {
		return 0, err
	}
	bare = &envtest.Environment{BinaryAssetsDirectory: bin}
	cfg, err := bare.Start()
	if err != nil {
		return 0, err
	}
	defer func() { _ = bare.Stop() }()
	scheme := app.Scheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return 0, err
	}
	if bareClient, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "install-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if kubeconfig, err = writeKubeconfig(dir, "admin", "system:masters"); err != nil {
		return 0, err
	}
	if nobody, err = writeKubeconfig(dir, "nobody"); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

func writeKubeconfig(dir, name string, groups ...string) (string, error) {
	path := filepath.Join(dir, name+".kubeconfig")
	return path, testenv.WriteKubeconfig(&bare.ControlPlane, path, envtest.User{Name: name, Groups: groups})
}

func runAs(kc string, args ...string) plugintest.Result {
	return plugintest.RunWithInput("", append(args, "--kubeconfig", kc)...)
}

func decodeAll(t *testing.T, r io.Reader) []*unstructured.Unstructured {
	t.Helper()
	dec := yaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func TestInstallDryRunClient(t *testing.T) {
	// Nothing is contacted: there is no kubeconfig.
	res := plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-o", "yaml", "-n", "ops", "--image", "registry.example.com/op:v1.2.3")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	objs := decodeAll(t, strings.NewReader(res.Stdout))
	var got []string
	for _, o := range objs {
		got = append(got, fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName()))
	}
	want := []string{
		"CustomResourceDefinition /agenttasks.sched.kubectl-sched.dev",
		"CustomResourceDefinition /clusterworkflowtemplates.sched.kubectl-sched.dev",
		"CustomResourceDefinition /cronworkflows.sched.kubectl-sched.dev",
		"CustomResourceDefinition /schedexts.sched.kubectl-sched.dev",
		"CustomResourceDefinition /userdeployments.sched.kubectl-sched.dev",
		"CustomResourceDefinition /workflows.sched.kubectl-sched.dev",
		"CustomResourceDefinition /workflowtemplates.sched.kubectl-sched.dev",
		"ValidatingAdmissionPolicy /kubectl-sched-cronworkflow-runs",
		"ValidatingAdmissionPolicy /kubectl-sched-app-hosts",
		"ValidatingAdmissionPolicy /kubectl-sched-ingress-hosts",
		"ValidatingAdmissionPolicy /kubectl-sched-operator-confinement",
		"ValidatingAdmissionPolicy /kubectl-sched-operator-managed",
		"ValidatingAdmissionPolicy /kubectl-sched-operator-node-patch",
		"ValidatingAdmissionPolicy /kubectl-sched-operator-pod-patch",
		"ValidatingAdmissionPolicy /kubectl-sched-pod-annotation-domains",
		"ValidatingAdmissionPolicy /kubectl-sched-pod-owners",
		"ValidatingAdmissionPolicy /kubectl-sched-reserved-labels",
		"ValidatingAdmissionPolicy /kubectl-sched-restricted-pods",
		"ValidatingAdmissionPolicy /kubectl-sched-secret-types",
		"ValidatingAdmissionPolicy /kubectl-sched-tier-history",
		"ValidatingAdmissionPolicy /kubectl-sched-tier-placement",
		"ValidatingAdmissionPolicy /kubectl-sched-tier-pod-tolerations",
		"ValidatingAdmissionPolicy /kubectl-sched-tier-ttl",
		"ValidatingAdmissionPolicy /kubectl-sched-tier-workspaces",
		"ValidatingAdmissionPolicy /kubectl-sched-workflow-approvals",
		"ValidatingAdmissionPolicy /kubectl-sched-self-approval",
		"ValidatingAdmissionPolicy /kubectl-sched-workflow-references",
		"ValidatingAdmissionPolicy /kubectl-sched-workflow-spec",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-cronworkflow-runs",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-app-hosts",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-ingress-hosts",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-operator-confinement",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-operator-managed",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-operator-node-patch",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-operator-pod-patch",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-pod-annotation-domains",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-pod-owners",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-reserved-labels",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-restricted-pods",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-secret-types",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-tier-history",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-tier-placement",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-tier-pod-tolerations",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-tier-ttl",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-tier-workspaces",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-workflow-approvals",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-self-approval",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-workflow-references",
		"ValidatingAdmissionPolicyBinding /kubectl-sched-workflow-spec",
		"Namespace /kubectl-sched-schedulers",
		"Namespace /ops",
		"PriorityClass /kubectl-sched-critical",
		"PriorityClass /kubectl-sched-high",
		"PriorityClass /kubectl-sched-medium",
		"PriorityClass /kubectl-sched-low",
		"ServiceAccount ops/kubectl-sched-operator",
		"ClusterRole /kubectl-sched-metrics-reader",
		"ClusterRole /kubectl-sched-operator-pod-logs",
		"ClusterRole /kubectl-sched-operator",
		"ClusterRole /kubectl-sched-edit",
		"ClusterRole /kubectl-sched-view",
		"ClusterRole /kubectl-sched-tenant",
		"ClusterRole /kubectl-sched-cluster-templates",
		"Role kubectl-sched-schedulers/kubectl-sched-operator",
		"Role ops/kubectl-sched-operator",
		"ClusterRoleBinding /kubectl-sched-operator",
		"ClusterRoleBinding /kubectl-sched-cluster-templates",
		"RoleBinding ops/kubectl-sched-operator",
		"RoleBinding kubectl-sched-schedulers/kubectl-sched-operator",
		"ConfigMap ops/kubectl-sched-operator-config",
		"ConfigMap ops/kubectl-sched-tiers",
		"Service ops/kubectl-sched-operator-metrics",
		"Deployment ops/kubectl-sched-operator",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"kubectl-sched-system", "image: operator\n"} {
		if strings.Contains(res.Stdout, bad) {
			t.Errorf("output still holds %q", bad)
		}
	}
	// The operator's confinement names it by its namespace.
	if !strings.Contains(res.Stdout, "request.userInfo.username == 'system:serviceaccount:ops:kubectl-sched-operator'") || !strings.Contains(res.Stdout, `'ops'`) {
		t.Errorf("the confinement policy does not name the operator in namespace ops")
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			var dep appsv1.Deployment
			if err := fromUnstructured(o, &dep); err != nil {
				t.Fatal(err)
			}
			c := dep.Spec.Template.Spec.Containers[0]
			if c.Image != "registry.example.com/op:v1.2.3" {
				t.Errorf("image %q", c.Image)
			}
			// The default tools image of its tasks' helpers.
			if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == manifests.OperatorImageEnv }); i < 0 || c.Env[i].Value != c.Image {
				t.Errorf("the operator is not told its image (%s): env %v", manifests.OperatorImageEnv, c.Env)
			}
			if v := dep.Labels["app.kubernetes.io/version"]; v != "v1.2.3" {
				t.Errorf("version label %q", v)
			}
		case "ValidatingAdmissionPolicyBinding":
			// The policies reading the operator's settings follow its ConfigMap.
			if ns, found, _ := unstructured.NestedString(o.Object, "spec", "paramRef", "namespace"); found && ns != "ops" {
				t.Errorf("binding %s reads its params from namespace %q", o.GetName(), ns)
			}
		case "ClusterRoleBinding", "RoleBinding":
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			if subjects[0].(map[string]any)["kind"] != "ServiceAccount" {
				// kubectl-sched-cluster-templates binds system:authenticated.
				break
			}
			if ns := subjects[0].(map[string]any)["namespace"]; ns != "ops" {
				t.Errorf("%s subject namespace %v", o.GetKind(), ns)
			}
		case "ValidatingAdmissionPolicy":
			// The reserved labels are the operator's: its exact account.
			if o.GetName() == "kubectl-sched-reserved-labels" && !strings.Contains(fmt.Sprint(o.Object["spec"]), "'system:serviceaccount:ops:kubectl-sched-operator'") {
				t.Errorf("policy %s does not name the operator's account in ops: %v", o.GetName(), o.Object["spec"])
			}
		case "CustomResourceDefinition":
			// The very manifests of config/crd/bases, not copies.
			root, err := testenv.RepoRoot()
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(root, "config", "crd", "bases", "sched.kubectl-sched.dev_"+strings.SplitN(o.GetName(), ".", 2)[0]+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			onDisk := decodeAll(t, f)
			f.Close()
			if diff := cmp.Diff(onDisk[0].Object, o.Object); diff != "" {
				t.Errorf("CRD %s differs from config/ (-config +printed):\n%s", o.GetName(), diff)
			}
		}
	}

	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	plugintest.Golden(t, "install-dry-run", res.Stdout)

	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-o", "json")
	if res.Code != 0 || !strings.Contains(res.Stdout, `"kind": "List"`) || !strings.Contains(res.Stdout, `"image": "`+manifests.DefaultImage("devel")+`"`) {
		t.Errorf("exit %d, want a List with the default image:\n%.2000s", res.Code, res.Stdout)
	}
}

// The scheduler namespace, its Role and RoleBinding follow the setting; it
// may not be the operator's namespace.
func TestInstallSchedulerNamespace(t *testing.T) {
	res := plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-o", "name", "--scheduler-namespace", "kernel")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-o", "yaml", "--scheduler-namespace", "kernel")
	var got []string
	for _, o := range decodeAll(t, strings.NewReader(res.Stdout)) {
		if o.GetName() == "kernel" || o.GetNamespace() == "kernel" || o.GetName() == "kubectl-sched-schedulers" || o.GetNamespace() == "kubectl-sched-schedulers" {
			got = append(got, fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName()))
		}
	}
	want := []string{"Namespace /kernel", "Role kernel/kubectl-sched-operator", "RoleBinding kernel/kubectl-sched-operator"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scheduler namespace objects (-want +got):\n%s", diff)
	}
	// The operator's confinement names the scheduler namespace in its CEL.
	if !strings.Contains(res.Stdout, `'kernel'`) || strings.Contains(res.Stdout, "kubectl-sched-schedulers") {
		t.Errorf("the policies still name kubectl-sched-schedulers, or not kernel:\n%s", res.Stdout)
	}

	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-n", "ops", "--scheduler-namespace", "ops")
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, `the scheduler namespace "ops" is the operator's`) {
		t.Errorf("exit %d, want %d; stderr %q", res.Code, cmdutil.ExitUsage, res.Stderr)
	}
}

func TestInstallNodePool(t *testing.T) {
	res := plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-o", "yaml", "--node-pool", "system")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	var dep appsv1.Deployment
	for _, o := range decodeAll(t, strings.NewReader(res.Stdout)) {
		if o.GetKind() == "Deployment" {
			if err := fromUnstructured(o, &dep); err != nil {
				t.Fatal(err)
			}
		}
	}
	spec := dep.Spec.Template.Spec
	if diff := cmp.Diff(map[string]string{schedv1.NodeLabelPool: "system"}, spec.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	want := []corev1.Toleration{{Key: schedv1.TaintPool, Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule}}
	if diff := cmp.Diff(want, spec.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}

	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "--node-pool", "Bad_Pool")
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, `--node-pool "Bad_Pool"`) {
		t.Errorf("exit %d, want %d naming the flag; stderr %q", res.Code, cmdutil.ExitUsage, res.Stderr)
	}
}

// TestInstallOperatorMemory: the operator asks for and is limited to
// config/manager's memory, or --operator-memory, and is told its limit
// (MEMORY_LIMIT, from which it sets Go's soft limit).
func TestInstallOperatorMemory(t *testing.T) {
	container := func(args ...string) corev1.Container {
		t.Helper()
		res := plugintest.RunWithInput("", append([]string{"install", "--pin-image=false", "--dry-run=client", "-o", "yaml"}, args...)...)
		if res.Code != 0 {
			t.Fatalf("exit %d: %s", res.Code, res.Stderr)
		}
		for _, o := range decodeAll(t, strings.NewReader(res.Stdout)) {
			if o.GetKind() == "Deployment" {
				var dep appsv1.Deployment
				if err := fromUnstructured(o, &dep); err != nil {
					t.Fatal(err)
				}
				return dep.Spec.Template.Spec.Containers[0]
			}
		}
		t.Fatal("no Deployment")
		return corev1.Container{}
	}
	for memory, args := range map[string][]string{install.DefaultOperatorMemory: nil, "1Gi": {"--operator-memory", "1Gi"}} {
		c := container(args...)
		q := resource.MustParse(memory)
		if got := c.Resources.Requests[corev1.ResourceMemory]; got.Cmp(q) != 0 {
			t.Errorf("%v: memory request %s, want %s", args, got.String(), memory)
		}
		if got := c.Resources.Limits[corev1.ResourceMemory]; got.Cmp(q) != 0 {
			t.Errorf("%v: memory limit %s, want %s", args, got.String(), memory)
		}
		want := &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: c.Name, Resource: "limits.memory"}}
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "MEMORY_LIMIT" })
		if i < 0 {
			t.Fatalf("%v: no MEMORY_LIMIT in %+v", args, c.Env)
		}
		if diff := cmp.Diff(want, c.Env[i].ValueFrom); diff != "" {
			t.Errorf("%v: MEMORY_LIMIT (-want +got):\n%s", args, diff)
		}
	}
	for _, bad := range []string{"lots", "64Mi"} {
		res := plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "--operator-memory", bad)
		if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, fmt.Sprintf("--operator-memory %q", bad)) {
			t.Errorf("--operator-memory %s: exit %d, want %d naming the flag; stderr %q", bad, res.Code, cmdutil.ExitUsage, res.Stderr)
		}
	}
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	b, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), len(b)).Decode(into)
}

// TestInstallUninstall walks a fresh cluster through install and
// uninstall; its steps depend on each other, so they run in order.
func TestInstallUninstall(t *testing.T) {
	ctx := context.Background()
	step := func(name string, args []string, wantCode int, check func(t *testing.T, res plugintest.Result)) {
		t.Helper()
		if !t.Run(name, func(t *testing.T) {
			res := runAs(kubeconfig, args...)
			if res.Code != wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", res.Code, wantCode, res.Stdout, res.Stderr)
			}
			if check != nil {
				check(t, res)
			}
		}) {
			t.FailNow()
		}
	}
	notInstalled := func(t *testing.T, res plugintest.Result) {
		for _, want := range []string{"the kubectl-sched resources are not installed in this cluster", "Run 'kubectl sched install'"} {
			if !strings.Contains(res.Stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, res.Stderr)
			}
		}
	}

	step("get before install", []string{"get", "at"}, cmdutil.ExitNotInstalled, notInstalled)
	step("get one before install", []string{"get", "wf", "x"}, cmdutil.ExitNotInstalled, notInstalled)
	step("describe before install", []string{"describe", "ud", "x"}, cmdutil.ExitNotInstalled, notInstalled)
	step("schedext status before install", []string{"schedext", "status"}, cmdutil.ExitNotInstalled, notInstalled)
	t.Run("forbidden install", func(t *testing.T) {
		res := runAs(nobody, "install", "--pin-image=false")
		if res.Code != cmdutil.ExitForbidden || !strings.Contains(res.Stderr, `may not patch customresourcedefinitions.apiextensions.k8s.io "agenttasks.sched.kubectl-sched.dev" at the cluster scope`) {
			t.Errorf("exit %d, stderr:\n%s", res.Code, res.Stderr)
		}
	})
	step("server dry run", []string{"install", "--pin-image=false", "--dry-run=server"}, 0, func(t *testing.T, res plugintest.Result) {
		if !strings.Contains(res.Stdout, "deployment.apps/kubectl-sched-operator skipped (server dry run): namespace \"kubectl-sched-system\" does not exist yet") {
			t.Errorf("stdout:\n%s", res.Stdout)
		}
		var crds apiextensionsv1.CustomResourceDefinitionList
		if err := bareClient.List(ctx, &crds); err != nil || len(crds.Items) != 0 {
			t.Errorf("a server dry run created %d CRDs (%v)", len(crds.Items), err)
		}
	})
	step("install", []string{"install", "--pin-image=false", "--image", "example.com/operator:v0.0.7"}, 0, func(t *testing.T, res plugintest.Result) {
		plugintest.Golden(t, "install", res.Stdout)
	})
	step("get after install", []string{"get", "at"}, 0, func(t *testing.T, res plugintest.Result) {
		if res.Stderr != "No resources found in default namespace.\n" {
			t.Errorf("stderr %q", res.Stderr)
		}
	})
	step("version reads the operator", []string{"version"}, 0, func(t *testing.T, res plugintest.Result) {
		if !strings.Contains(res.Stdout, "Operator Version: v0.0.7") {
			t.Errorf("stdout:\n%s", res.Stdout)
		}
	})
	t.Run("default settings and priority classes", func(t *testing.T) {
		data, _ := installedSettings(t)
		if data["INGRESS_DOMAIN"] != "apps.example.com" || data["CLUSTER_ISSUER"] != "" {
			t.Errorf("settings %v", data)
		}
		checkPriorityClasses(t, map[string]int32{"kubectl-sched-critical": 1000000, "kubectl-sched-high": 10000, "kubectl-sched-medium": 100, "kubectl-sched-low": -100})
	})
	_, firstHash := installedSettings(t)
	step("install with settings", []string{"install", "--pin-image=false", "--image", "example.com/operator:v0.0.7", "--ingress-domain", "apps.example.org", "--cluster-issuer", "letsencrypt-prod", "-o", "name"}, 0, func(t *testing.T, res plugintest.Result) {
		data, hash := installedSettings(t)
		if data["INGRESS_DOMAIN"] != "apps.example.org" || data["CLUSTER_ISSUER"] != "letsencrypt-prod" || data["INGRESS_PROVIDER"] != "ingress" {
			t.Errorf("settings %v", data)
		}
		if hash == firstHash {
			t.Errorf("the operator's pod template hash %q did not change with its settings", hash)
		}
	})
	_, settingsHash := installedSettings(t)
	step("install again changes nothing", []string{"install", "--pin-image=false", "--image", "example.com/operator:v0.0.7", "-o", "name"}, 0, func(t *testing.T, res plugintest.Result) {
		if !strings.Contains(res.Stdout, "deployment.apps/kubectl-sched-operator\n") {
			t.Errorf("stdout:\n%s", res.Stdout)
		}
		// Settings not given keep their installed values.
		data, hash := installedSettings(t)
		if data["INGRESS_DOMAIN"] != "apps.example.org" || data["CLUSTER_ISSUER"] != "letsencrypt-prod" || hash != settingsHash {
			t.Errorf("settings %v, hash %q (was %q)", data, hash, settingsHash)
		}
	})
	// Nothing runs the operator's pods here: --wait follows the Deployment
	// by watch until --timeout, then exits 12.
	step("install --wait times out", []string{"install", "--pin-image=false", "--image", "example.com/operator:v0.0.7", "-o", "name", "--wait", "--timeout", "1s"}, cmdutil.ExitWatchTimeout, func(t *testing.T, res plugintest.Result) {
		for _, want := range []string{
			"timed out after 1s waiting for the operator Deployment to be available",
			"'kubectl -n kubectl-sched-system describe deployment kubectl-sched-operator' shows why.",
		} {
			if !strings.Contains(res.Stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, res.Stderr)
			}
		}
	})
	step("upgrade says what changed", []string{"install", "--pin-image=false", "--image", "example.com/operator:v0.0.8"}, 0, func(t *testing.T, res plugintest.Result) {
		for _, want := range []string{
			"customresourcedefinition.apiextensions.k8s.io/agenttasks.sched.kubectl-sched.dev unchanged\n",
			"clusterrole.rbac.authorization.k8s.io/kubectl-sched-operator unchanged\n",
			"deployment.apps/kubectl-sched-operator configured\n  operator image: example.com/operator:v0.0.7 -> example.com/operator:v0.0.8\n",
			"Upgraded from operator v0.0.7: 1 configured, 0 created, ",
		} {
			if !strings.Contains(res.Stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, res.Stdout)
			}
		}
		if n := strings.Count(res.Stdout, " configured\n"); n != 1 {
			t.Errorf("%d objects configured, want the operator Deployment alone:\n%s", n, res.Stdout)
		}
	})
	// An object the CRDs' deletion takes with it.
	task := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sched.kubectl-sched.dev/v1alpha1", "kind": "AgentTask",
		"metadata": map[string]any{"name": "survivor", "namespace": "default"},
		"spec":     map[string]any{"image": "busybox"},
	}}
	if err := bareClient.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	step("uninstall needs --yes", []string{"uninstall"}, cmdutil.ExitUsage, func(t *testing.T, res plugintest.Result) {
		for _, want := range []string{"every UserDeployment, AgentTask, Workflow, CronWorkflow and SchedExt in the cluster (now: 1 agenttasks)", "--yes", "--keep-crds"} {
			if !strings.Contains(res.Stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, res.Stderr)
			}
		}
	})
	step("uninstall dry run", []string{"uninstall", "--dry-run=server"}, 0, func(t *testing.T, res plugintest.Result) {
		plugintest.Golden(t, "uninstall-dry-run", res.Stdout)
	})
	// The RoleBinding the operator makes for itself in a namespace it
	// serves, to read pod logs; and one of the same name that is not its.
	podLogs := func(ns, role string) *rbacv1.RoleBinding {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: schedv1.OperatorPodLogsRole, Namespace: ns, Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kubectl-sched-operator", Namespace: "kubectl-sched-system"}},
		}
		if err := bareClient.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
		return rb
	}
	ours := podLogs("default", schedv1.OperatorPodLogsRole)
	notOurs := podLogs("kube-public", "view")
	step("uninstall keeping the CRDs", []string{"uninstall", "--keep-crds"}, 0, func(t *testing.T, res plugintest.Result) {
		if strings.Contains(res.Stdout, "customresourcedefinition") || !strings.Contains(res.Stdout, `deployment.apps "kubectl-sched-operator" deleted`) {
			t.Errorf("stdout:\n%s", res.Stdout)
		}
		err := bareClient.Get(ctx, client.ObjectKey{Namespace: "kubectl-sched-system", Name: "kubectl-sched-operator"}, &appsv1.Deployment{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("the operator Deployment is still there (%v)", err)
		}
		if err := bareClient.Get(ctx, client.ObjectKeyFromObject(ours), &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
			t.Errorf("the operator's pod-logs RoleBinding in default is still there (%v)", err)
		}
		if err := bareClient.Get(ctx, client.ObjectKeyFromObject(notOurs), &rbacv1.RoleBinding{}); err != nil {
			t.Errorf("a RoleBinding of the same name to another role was deleted (%v)", err)
		}
	})
	step("objects survive --keep-crds", []string{"get", "at", "survivor", "-o", "name"}, 0, nil)
	// A task's pod still held for its outputs, with the operator gone: only
	// uninstall can let it go. Another finalizer on it is left alone.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "survivor-x", Namespace: "default",
			Labels:     map[string]string{schedv1.LabelAgentTask: "survivor"},
			Finalizers: []string{schedv1.FinalizerOutputs, "example.com/keep"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "task", Image: "busybox"}}},
	}
	if err := bareClient.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	step("uninstall", []string{"uninstall", "--yes"}, 0, func(t *testing.T, res plugintest.Result) {
		if !strings.Contains(res.Stderr, "Warning: deleting the CRDs deletes every kubectl-sched object in the cluster (now: 1 agenttasks).") {
			t.Errorf("stderr:\n%s", res.Stderr)
		}
		if err := bareClient.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"example.com/keep"}, pod.Finalizers); diff != "" {
			t.Errorf("pod finalizers after uninstall (-want +got):\n%s", diff)
		}
		plugintest.Golden(t, "uninstall", res.Stdout)
		var crds apiextensionsv1.CustomResourceDefinitionList
		if err := bareClient.List(ctx, &crds); err != nil || len(crds.Items) != 0 {
			t.Errorf("%d CRDs left (%v)", len(crds.Items), err)
		}
	})
	step("get after uninstall", []string{"get", "at"}, cmdutil.ExitNotInstalled, notInstalled)
}

func TestInstallUnreachable(t *testing.T) {
	res := plugintest.RunWithInput("", "install", "--pin-image=false", "--server", "https://127.0.0.1:1", "--request-timeout", "2s")
	if res.Code != cmdutil.ExitUnreachable || !strings.Contains(res.Stderr, "cannot reach the cluster") {
		t.Errorf("exit %d, stderr:\n%s", res.Code, res.Stderr)
	}
}

func TestObjectsAreWellFormed(t *testing.T) {
	objs, err := manifests.Objects("img", "ns", "v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if manifests.Namespaced(o.GroupVersionKind()) != (o.GetNamespace() != "") {
			t.Errorf("%s %s: namespace %q does not fit its scope", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	cases := map[string]struct{ image, plugin, want string }{
		"tag":              {image: "r/op:v1.2.3", plugin: "devel", want: "v1.2.3"},
		"port, no tag":     {image: "localhost:5000/op", plugin: "v0.1.0", want: "v0.1.0"},
		"digest":           {image: "r/op@sha256:abc", plugin: "v0.1.0", want: "v0.1.0"},
		"build metadata":   {image: "r/op", plugin: "v0.1.0+dirty", want: "v0.1.0_dirty"},
		"nothing to go by": {image: "r/op", plugin: "", want: "unknown"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := manifests.VersionOf(tc.image, tc.plugin); got != tc.want {
				t.Errorf("VersionOf(%q, %q) = %q, want %q", tc.image, tc.plugin, got, tc.want)
			}
		})
	}
	if got := manifests.DefaultImage("v0.3.0"); got != "ghcr.io/kubectl-sched/operator:v0.3.0" {
		t.Errorf("DefaultImage = %q", got)
	}
	pinned, err := config.OperatorImage()
	if err != nil {
		t.Fatal(err)
	}
	if got := manifests.DefaultImage("devel"); got != pinned || strings.HasSuffix(got, ":latest") {
		t.Errorf("DefaultImage(devel) = %q, want the release config/manager pins, %q", got, pinned)
	}
}

// TestInstallWithoutOperator leaves out the Deployment and its Service, for
// running the operator elsewhere (make run, the local demo).
func TestInstallWithoutOperator(t *testing.T) {
	res := plugintest.RunWithInput("", "install", "--without-operator", "--dry-run=client", "-o", "name")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	for _, absent := range []string{"deployment.apps/", "service/", "configmap/kubectl-sched-operator-config"} {
		if strings.Contains(res.Stdout, absent) {
			t.Errorf("output names a %s:\n%s", absent, res.Stdout)
		}
	}
	for _, present := range []string{"customresourcedefinition.apiextensions.k8s.io/workflows.sched.kubectl-sched.dev", "clusterrole.rbac.authorization.k8s.io/kubectl-sched-operator", "validatingadmissionpolicy", "configmap/kubectl-sched-tiers"} {
		if !strings.Contains(res.Stdout, present) {
			t.Errorf("output lacks %s:\n%s", present, res.Stdout)
		}
	}
}
