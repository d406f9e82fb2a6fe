package install_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
)

// TestSelectorCEL holds the CEL install writes into the operator's
// namespace policy to the verdict of labels.Selector, which the operator
// serves namespaces by, for every selector form and label set below.
func TestSelectorCEL(t *testing.T) {
	env, err := cel.NewEnv(cel.Variable("nsLabels", cel.MapType(cel.StringType, cel.StringType)), ext.Strings())
	if err != nil {
		t.Fatal(err)
	}
	selectors := []string{
		"",
		"sched.kubectl-sched.dev/tier",
		"!sched.kubectl-sched.dev/tier",
		"team=a",
		"team==a",
		"team!=a",
		"team in (a, b)",
		"team notin (a,b)",
		"team=a,env!=prod",
		"sched.kubectl-sched.dev/tier,team in (a,b),!legacy",
		"size>3",
		"size<3",
	}
	sets := []map[string]string{
		{},
		{"sched.kubectl-sched.dev/tier": "free"},
		{"team": "a"},
		{"team": "b", "env": "prod"},
		{"team": "a", "env": "dev", "sched.kubectl-sched.dev/tier": "team"},
		{"team": "c", "legacy": ""},
		{"sched.kubectl-sched.dev/tier": "team", "team": "b", "legacy": "true"},
		{"size": "4"},
		{"size": "3"},
		{"size": "2"},
		{"size": "x"},
		{"size": "1234567890123456789012345"},
	}
	for _, s := range selectors {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		expr, err := manifests.SelectorCEL(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		ast, iss := env.Compile(strings.ReplaceAll(expr, "variables.nsLabels", "nsLabels"))
		if iss.Err() != nil {
			t.Fatalf("%q: %s: %v", s, expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		for _, set := range sets {
			out, _, err := prg.Eval(map[string]any{"nsLabels": set})
			if err != nil {
				t.Errorf("%q on %v: %s: %v", s, set, expr, err)
				continue
			}
			if got, want := out.Value() == true, sel.Matches(labels.Set(set)); got != want {
				t.Errorf("%q on %v: CEL %s says %v, the operator's selector %v", s, set, expr, got, want)
			}
		}
	}
	if _, err := manifests.SelectorCEL("team in (a"); err == nil {
		t.Error("a broken selector: no error")
	}
}

// TestInstalledOperatorServesOnlyItsNamespaces: installed with a
// --namespace-selector, the operator's own service account (impersonated:
// a stolen token) writes nothing in a namespace the selector leaves out,
// though RBAC lets it; in a selected namespace it writes what it labels,
// and Events anywhere.
func TestInstalledOperatorServesOnlyItsNamespaces(t *testing.T) {
	ctx := context.Background()
	at := []string{"-n", "served-ops", "--scheduler-namespace", "served-schedulers"}
	res := runAs(kubeconfig, append([]string{"install", "--without-operator", "--namespace-selector", "team in (a),!legacy", "-o", "name"}, at...)...)
	if res.Code != 0 {
		t.Fatalf("install: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	t.Cleanup(func() {
		if res := runAs(kubeconfig, append([]string{"uninstall", "--yes"}, at...)...); res.Code != 0 {
			t.Errorf("uninstall: exit %d\n%s", res.Code, res.Stderr)
		}
	})
	for name, labels := range map[string]map[string]string{
		"served-a":      {"team": "a"},
		"served-b":      {"team": "b"},
		"served-legacy": {"team": "a", "legacy": "true"},
	} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		if err := bareClient.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bareClient.Delete(context.Background(), ns) })
	}
	user := "system:serviceaccount:served-ops:" + schedv1.OperatorServiceAccount
	if err := testenv.WaitAllowed(ctx, bareClient, user, authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: "served-b"}); err != nil {
		t.Fatalf("the refusals below must be the policy's, not RBAC's: %v", err)
	}
	cfg := rest.CopyConfig(bare.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:served-ops", "system:authenticated"}}
	op, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	configMap := func(ns string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns, Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue}}}
	}
	const refusal = "the kubectl-sched operator serves only the namespaces its --namespace-selector (team in (a),!legacy) selects"
	// Policies take effect asynchronously.
	var last error
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = op.Create(ctx, configMap("served-b"), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), refusal), nil
	})
	for _, ns := range []string{"served-b", "served-legacy"} {
		if err := op.Create(ctx, configMap(ns), client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), refusal+", and "+ns+" is not one of them") {
			t.Errorf("a ConfigMap in %s: err = %v, want forbidden saying %q", ns, err, refusal)
		}
	}
	if err := op.Create(ctx, configMap("served-a"), client.DryRunAll); err != nil {
		t.Errorf("a ConfigMap in the served namespace: %v", err)
	}
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "served-b"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "served-b", Name: "p"}}
	if err := op.Create(ctx, event, client.DryRunAll); err != nil {
		t.Errorf("an Event in another namespace: %v", err)
	}
}
