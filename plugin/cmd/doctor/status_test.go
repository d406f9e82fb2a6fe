package doctor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-sched/kubectl-sched/api/operatorstatus"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
)

func allServed() map[string]bool {
	return map[string]bool{"agenttasks": true, "workflows": true, "cronworkflows": true, "userdeployments": true, "schedexts": true, "workflowtemplates": true, "clusterworkflowtemplates": true}
}

func labelled(v string) map[string]string {
	return map[string]string{"agenttasks": v, "workflows": v, "cronworkflows": v, "userdeployments": v, "schedexts": v, "workflowtemplates": v, "clusterworkflowtemplates": v}
}

func TestCRDStatus(t *testing.T) {
	const fix = "run 'kubectl sched install' with the plugin of the operator's version ('kubectl krew upgrade sched' first if this one is older)"
	cases := map[string]struct {
		served   map[string]bool
		versions map[string]string
		differ   []string
		readErr  string
		plugin   string
		want     Check
	}{
		"none served": {
			served: map[string]bool{}, plugin: "v1.2.0",
			want: Check{Name: "crds", Status: Fail, Fix: "kubectl sched install",
				Message: "not served: userdeployments, agenttasks, workflows, cronworkflows, workflowtemplates, clusterworkflowtemplates, schedexts (group sched.kubectl-sched.dev/v1alpha1)"},
		},
		"one missing": {
			served: map[string]bool{"agenttasks": true, "workflows": true, "cronworkflows": true, "userdeployments": true, "workflowtemplates": true, "clusterworkflowtemplates": true}, plugin: "v1.2.0",
			want: Check{Name: "crds", Status: Fail, Fix: "kubectl sched install",
				Message: "not served: schedexts (group sched.kubectl-sched.dev/v1alpha1)"},
		},
		"the plugin's": {
			served: allServed(), versions: map[string]string{}, plugin: "v1.2.0",
			want: Check{Name: "crds", Status: OK, Message: "7 of 7 served (sched.kubectl-sched.dev/v1alpha1); the same as this plugin's (v1.2.0)"},
		},
		"schemas differ": {
			served: allServed(), versions: map[string]string{}, differ: []string{"agenttasks", "workflows"}, plugin: "v1.2.0",
			want: Check{Name: "crds", Status: Warn, Fix: fix,
				Message: "7 of 7 served (sched.kubectl-sched.dev/v1alpha1); agenttasks, workflows differ from this plugin's (v1.2.0): another version installed them"},
		},
		"same release labelled": {
			served: allServed(), versions: labelled("v1.2.3"), plugin: "v1.2.0",
			want: Check{Name: "crds", Status: OK, Message: "7 of 7 served (sched.kubectl-sched.dev/v1alpha1); the same as this plugin's (v1.2.0)"},
		},
		"older release labelled": {
			served: allServed(), versions: map[string]string{"agenttasks": "v1.1.0", "workflows": "v1.2.0", "userdeployments": "v1.2.0", "schedexts": "v1.2.0"}, plugin: "v1.2.0",
			want: Check{Name: "crds", Status: Warn, Fix: fix,
				Message: "7 of 7 served (sched.kubectl-sched.dev/v1alpha1); at another version than the plugin's v1.2.0: agenttasks v1.1.0"},
		},
		"dev build": {
			served: allServed(), versions: labelled("v1.1.0"), plugin: "devel",
			want: Check{Name: "crds", Status: OK, Message: "7 of 7 served (sched.kubectl-sched.dev/v1alpha1); the same as this plugin's (devel); version labels not compared: the plugin is a development build"},
		},
		"forbidden": {
			served: allServed(), readErr: "(forbidden: x)", plugin: "v1.2.0",
			want: Check{Name: "crds", Status: OK, Message: "7 of 7 served (sched.kubectl-sched.dev/v1alpha1); not compared with the plugin's (forbidden: x)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, crdStatus(tc.served, tc.versions, tc.differ, tc.readErr, tc.plugin)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func deployment(replicas, ready int32, version string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-sched-operator", Namespace: "ops",
		Labels: map[string]string{"app.kubernetes.io/version": version}}}
	d.Spec.Replicas = &replicas
	d.Status.ReadyReplicas = ready
	return d
}

func TestOperatorStatus(t *testing.T) {
	cases := map[string]struct {
		dep    *appsv1.Deployment
		plugin string
		held   bool
		status Status
		msg    string
	}{
		"missing":                {nil, "v1.2.0", false, Fail, "no Deployment labelled app.kubernetes.io/name=kubectl-sched-operator in any namespace"},
		"outside the cluster":    {nil, "v1.2.0", true, Warn, "no Deployment labelled app.kubernetes.io/name=kubectl-sched-operator, but an operator holds the leader Lease (run outside the cluster?)"},
		"ready":                  {deployment(1, 1, "v1.2.3"), "v1.2.0", false, OK, "Deployment ops/kubectl-sched-operator (v1.2.3): 1 of 1 replicas ready"},
		"not ready":              {deployment(1, 0, "v1.2.3"), "v1.2.0", true, Fail, "Deployment ops/kubectl-sched-operator (v1.2.3): 0 of 1 replicas ready"},
		"scaled to zero":         {deployment(0, 0, "v1.2.3"), "v1.2.0", false, Fail, "Deployment ops/kubectl-sched-operator (v1.2.3): 0 of 0 replicas ready"},
		"older operator":         {deployment(1, 1, "v1.1.0"), "v1.2.0", false, Warn, "Deployment ops/kubectl-sched-operator (v1.1.0): 1 of 1 replicas ready; the operator (v1.1.0) is older than the plugin (v1.2.0)"},
		"dev plugin, no warning": {deployment(1, 1, "v1.1.0"), "devel", false, OK, "Deployment ops/kubectl-sched-operator (v1.1.0): 1 of 1 replicas ready"},
		"no version label":       {deployment(1, 1, ""), "v1.2.0", false, OK, "Deployment ops/kubectl-sched-operator (unknown version): 1 of 1 replicas ready"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := operatorStatus(tc.dep, tc.plugin, tc.held)
			if got.Status != tc.status || got.Message != tc.msg {
				t.Errorf("got %s %q, want %s %q", got.Status, got.Message, tc.status, tc.msg)
			}
			if (got.Status == OK) != (got.Fix == "") {
				t.Errorf("status %s with fix %q: every problem needs a fix, and only problems", got.Status, got.Fix)
			}
		})
	}
}

func TestLeaderStatus(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, renewedAgo time.Duration, duration int32) *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		l.Spec.HolderIdentity = &holder
		l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-renewedAgo)}
		l.Spec.LeaseDurationSeconds = &duration
		return l
	}
	const where = "Lease ops/kubectl-sched-operator.sched.kubectl-sched.dev"
	cases := map[string]struct {
		lease  *coordinationv1.Lease
		status Status
		msg    string
	}{
		"none":       {nil, Fail, "no " + where + ": no operator has led"},
		"released":   {lease("", 0, 15), Fail, where + " has no holder: no operator leads"},
		"fresh":      {lease("op-1_abc", 3*time.Second, 15), OK, where + " held by op-1_abc, renewed 3s ago"},
		"at the end": {lease("op-1_abc", 15*time.Second, 15), OK, where + " held by op-1_abc, renewed 15s ago"},
		"stale":      {lease("op-1_abc", 5*time.Minute, 15), Fail, where + " held by op-1_abc, renewed 5m0s ago, past its duration: the leader stopped renewing"},
		"clock skew": {lease("op-1_abc", -2*time.Second, 15), OK, where + " held by op-1_abc, renewed 0s ago"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := leaderStatus(tc.lease, "ops", now)
			if got.Status != tc.status || got.Message != tc.msg {
				t.Errorf("got %s %q, want %s %q", got.Status, got.Message, tc.status, tc.msg)
			}
			if (got.Status == OK) != (got.Fix == "") {
				t.Errorf("status %s with fix %q", got.Status, got.Fix)
			}
		})
	}
}

// The managed policy's namespaces against the operator's setting: install
// writes both; a selector changed in the ConfigMap alone is reported.
func TestServedDrift(t *testing.T) {
	managed := func(served string) []admissionregistrationv1.ValidatingAdmissionPolicy {
		return []admissionregistrationv1.ValidatingAdmissionPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-sched-operator-managed"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Variables: []admissionregistrationv1.Variable{{Name: "served", Expression: served}}}}}
	}
	tier := `("sched.kubectl-sched.dev/tier" in variables.nsLabels)`
	for name, tc := range map[string]struct {
		policies []admissionregistrationv1.ValidatingAdmissionPolicy
		settings map[string]string
		drift    bool
	}{
		"as installed":              {managed(tier), map[string]string{"NAMESPACE_SELECTOR": "sched.kubectl-sched.dev/tier"}, false},
		"every namespace":           {managed("true"), map[string]string{"NAMESPACE_SELECTOR": ""}, false},
		"selector set by hand":      {managed("true"), map[string]string{"NAMESPACE_SELECTOR": "sched.kubectl-sched.dev/tier"}, true},
		"selector removed by hand":  {managed(tier), map[string]string{"NAMESPACE_SELECTOR": ""}, true},
		"no settings":               {managed(tier), nil, false},
		"no policy":                 {nil, map[string]string{"NAMESPACE_SELECTOR": "x"}, false},
		"a selector that is broken": {managed("true"), map[string]string{"NAMESPACE_SELECTOR": "x in (y"}, false},
	} {
		if got := servedDrift(tc.policies, tc.settings); (got != "") != tc.drift {
			t.Errorf("%s: %q, want drift %v", name, got, tc.drift)
		}
	}
}

func TestPoliciesStatus(t *testing.T) {
	deny := []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
	want := []wantBinding{{Name: "a", Policy: "a", Actions: deny}, {Name: "b", Policy: "b", Actions: deny}}
	policy := func(name string, warnings ...string) admissionregistrationv1.ValidatingAdmissionPolicy {
		p := admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if len(warnings) > 0 {
			p.Status.TypeChecking = &admissionregistrationv1.TypeChecking{}
			for _, w := range warnings {
				p.Status.TypeChecking.ExpressionWarnings = append(p.Status.TypeChecking.ExpressionWarnings,
					admissionregistrationv1.ExpressionWarning{FieldRef: "spec.validations[0].expression", Warning: w})
			}
		}
		return p
	}
	binding := func(name, policy string, actions ...admissionregistrationv1.ValidationAction) admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		return admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: actions}}
	}
	type vaps = []admissionregistrationv1.ValidatingAdmissionPolicy
	type bindings = []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	cases := map[string]struct {
		policies vaps
		bindings bindings
		want     Check
	}{
		"all": {vaps{policy("a"), policy("b")}, bindings{binding("a", "a", "Deny"), binding("b", "b", "Deny")},
			Check{Name: "policies", Status: OK, Message: "2 of 2 bound and active"}},
		"none": {nil, nil, Check{Name: "policies", Status: Fail, Fix: "kubectl sched install", Message: "none of the 2 installed"}},
		"one gone": {vaps{policy("a")}, bindings{binding("a", "a", "Deny")}, Check{Name: "policies", Status: Fail, Fix: "kubectl sched install",
			Message: "1 of 2 not bound and active", Details: []string{"policy b missing", "binding b missing"}}},
		"audit only": {vaps{policy("a"), policy("b")}, bindings{binding("a", "a", "Audit"), binding("b", "b", "Deny")},
			Check{Name: "policies", Status: Fail, Fix: "kubectl sched install",
				Message: "1 of 2 not bound and active", Details: []string{"binding a has validationActions [Audit], not [Deny]"}}},
		"rebound": {vaps{policy("a"), policy("b")}, bindings{binding("a", "a", "Deny"), binding("b", "other", "Deny")},
			Check{Name: "policies", Status: Fail, Fix: "kubectl sched install",
				Message: "1 of 2 not bound and active", Details: []string{`binding b binds "other", not b`}}},
		"type warnings": {vaps{policy("a", "no such field"), policy("b")}, bindings{binding("a", "a", "Deny"), binding("b", "b", "Deny")},
			Check{Name: "policies", Status: Warn, Fix: "kubectl sched install (with a plugin whose CRDs match the installed ones)",
				Message: "2 of 2 bound and active; 1 with type-checking warnings", Details: []string{"policy a: spec.validations[0].expression: no such field"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := policiesStatus(want, tc.policies, tc.bindings)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionalAPIsStatus(t *testing.T) {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{operatorstatus.AnnotationOptionalAPIs: operatorstatus.Encode([]operatorstatus.OptionalAPI{
		{Name: "cert-manager", API: "cert-manager.io/v1 Certificate", State: operatorstatus.InUse},
		{Name: "Traefik", API: "traefik.io/v1alpha1 IngressRoute", State: operatorstatus.NotInstalled, Message: "not served"},
	})}}}
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	got := optionalAPIsStatus(l, "ops")
	want := Check{Name: "optional-apis", Status: OK, Message: "2 reported, 1 in use (at 2026-01-02T03:04:05Z)", Details: []string{
		"cert-manager (cert-manager.io/v1 Certificate): in use",
		"Traefik (traefik.io/v1alpha1 IngressRoute): not installed; not served",
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for name, l := range map[string]*coordinationv1.Lease{"no lease": nil, "no annotation": {}, "garbage": {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{operatorstatus.AnnotationOptionalAPIs: "{"}}}} {
		if got := optionalAPIsStatus(l, "ops"); got.Status != Warn || got.Fix == "" {
			t.Errorf("%s: got %+v, want a warning with a fix", name, got)
		}
	}
}

func TestSettingsStatus(t *testing.T) {
	cm := &corev1.ConfigMap{Data: map[string]string{"ZZ_EXTRA": "1", "INGRESS_DOMAIN": "apps.example.org", "INGRESS_PROVIDER": "ingress", "CLUSTER_ISSUER": ""}}
	got := settingsStatus(cm, "ops")
	want := Check{Name: "settings", Status: OK, Message: "4 set in ConfigMap ops/kubectl-sched-operator-config",
		Details: []string{"INGRESS_DOMAIN=apps.example.org", "INGRESS_PROVIDER=ingress", "CLUSTER_ISSUER=", "ZZ_EXTRA=1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := settingsStatus(nil, "ops"); got.Status != Warn || got.Fix != "kubectl sched install" {
		t.Errorf("without the ConfigMap: %+v", got)
	}
}

func TestNodesStatus(t *testing.T) {
	node := func(name, pool string, simulated bool) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
		if pool != "" {
			n.Labels[schedv1.NodeLabelPool] = pool
		}
		if simulated {
			n.Annotations[kwokNode] = "fake"
		}
		return n
	}
	nodes := []corev1.Node{node("g1", "general", true), node("g2", "general", true), node("real", "real", false), node("x", "", true)}
	scx := schedv1.SchedExt{ObjectMeta: metav1.ObjectMeta{Name: "lavd"}}
	scx.Spec.NodeSelector = map[string]string{schedv1.NodeLabelPool: "general"}
	scx.Status.DesiredNodes, scx.Status.ReadyNodes = 2, 1
	scx.Status.UnsupportedNodes = []string{"g2"}

	got := nodesStatus(nodes, []schedv1.SchedExt{scx}, "")
	want := Check{Name: "nodes", Status: Warn, Message: "4 node(s) in 3 pool(s); nodes without sched_ext in pool general",
		Fix: "'kubectl sched schedext status' names them; run SchedExts only on pools whose kernels have sched_ext (6.12+)",
		Details: []string{
			"pool (no pool): 1 node(s) (1 simulated); no SchedExt selects them (sched_ext support unknown)",
			"pool general: 2 node(s) (2 simulated); SchedExt lavd 1/2 ready; 1 without sched_ext",
			"pool real: 1 node(s); no SchedExt selects them (sched_ext support unknown)",
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	scx.Status.UnsupportedNodes, scx.Status.ReadyNodes = nil, 2
	if got := nodesStatus(nodes, []schedv1.SchedExt{scx}, ""); got.Status != OK || got.Details[1] != "pool general: 2 node(s) (2 simulated); SchedExt lavd 2/2 ready" {
		t.Errorf("all attached: %+v", got)
	}
	if got := nodesStatus(nodes, nil, "(forbidden: x)"); got.Status != OK || !strings.HasSuffix(got.Message, "SchedExts not read (forbidden: x)") {
		t.Errorf("SchedExts forbidden: %+v", got)
	}
	if got := nodesStatus(nil, nil, ""); got.Status != Warn {
		t.Errorf("no nodes: %+v", got)
	}
}

func TestRBACStatus(t *testing.T) {
	rows := []CommandAccess{
		{Command: "get", Allowed: true},
		{Command: "logs", Missing: []string{"get pods/log"}},
		{Command: "install", ClusterWide: true, Missing: []string{"create customresourcedefinitions.apiextensions.k8s.io (cluster-wide)"}},
	}
	got := rbacStatus("team", rows)
	want := Check{Name: "rbac", Status: Warn, Message: "1 of 3 commands allowed in namespace team; 1 denied there",
		Fix: "ask an admin of namespace team to bind you to the ClusterRole kubectl-sched-tenant ('kubectl sched tenant create' binds a tenant's members)",
		Details: []string{
			"allowed get",
			"denied  logs: needs get pods/log",
			"denied  install: needs create customresourcedefinitions.apiextensions.k8s.io (cluster-wide)",
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Only cluster-wide commands denied: what a tenant's member sees.
	if got := rbacStatus("team", []CommandAccess{rows[0], rows[2]}); got.Status != OK || got.Fix != "" {
		t.Errorf("cluster-wide denials warn: %+v", got)
	}
}

func TestExitError(t *testing.T) {
	cases := map[string]struct {
		checks []Check
		code   int
	}{
		"all fine":          {[]Check{{Name: "crds", Status: OK}, {Name: "nodes", Status: Warn}, {Name: "rbac", Status: Skip}}, 0},
		"a failure":         {[]Check{{Name: "crds", Status: OK}, {Name: "operator", Status: Fail}}, 1},
		"CRDs first":        {[]Check{{Name: "crds", Status: Fail, Message: "not served: agenttasks"}, {Name: "operator", Status: Fail}}, 4},
		"CRDs unreadable":   {[]Check{{Name: "crds", Status: Fail, Message: "cannot get"}}, 1},
		"skipped is no err": {[]Check{{Name: "operator", Status: Skip}}, 0},
	}
	for name, tc := range cases {
		err := exitError(Report{Checks: tc.checks})
		if code := cmdutil.ExitCode(err); code != tc.code {
			t.Errorf("%s: exit %d (%v), want %d", name, code, err, tc.code)
		}
	}
}

func TestSameVersions(t *testing.T) {
	objs, err := manifests.Objects(manifests.ManifestImage, "ops", "")
	if err != nil {
		t.Fatal(err)
	}
	var crd *unstructured.Unstructured
	for _, o := range objs {
		if o.GetName() == "agenttasks."+schedv1.GroupName {
			crd = o
		}
	}
	installed := crd.DeepCopy()
	installed.SetLabels(map[string]string{"app.kubernetes.io/version": "v1.0.0"})
	if !sameVersions(crd, installed) {
		t.Error("metadata alone makes the CRD differ")
	}
	versions, _, _ := unstructured.NestedSlice(installed.Object, "spec", "versions")
	if err := unstructured.SetNestedField(versions[0].(map[string]any), "older", "schema", "openAPIV3Schema", "description"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(installed.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if sameVersions(crd, installed) {
		t.Error("another schema is the same")
	}
	if sameVersions(nil, installed) {
		t.Error("a CRD the plugin does not have is the same")
	}
}

func TestPrintText(t *testing.T) {
	rep := Report{PluginVersion: "v1.2.0", User: "alice", Namespace: "team", OperatorNamespace: "ops", Checks: []Check{
		{Name: "crds", Status: OK, Message: "fine"},
		{Name: "operator", Status: Fail, Message: "gone\x1b[2J\nreally", Fix: "kubectl sched install"},
		{Name: "settings", Status: Warn, Message: "some", Details: []string{"INGRESS_DOMAIN=x\x1b]52;c;aGk=\x07\ry"}},
	}}
	var plain, color strings.Builder
	printText(&plain, rep, false)
	want := `kubectl sched doctor (plugin v1.2.0) as "alice", namespace team, operator namespace ops
OK    crds          fine
FAIL  operator      gone^[[2J really; fix: kubectl sched install
WARN  settings      some
      INGRESS_DOMAIN=x^[]52;c;aGk=^G y
`
	if diff := cmp.Diff(want, plain.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	printText(&color, rep, true)
	if !strings.Contains(color.String(), "\x1b[31mFAIL\x1b[0m  operator") || strings.Count(color.String(), "\x1b[0m") != 3 {
		t.Errorf("coloured:\n%q", color.String())
	}
}

// The plugin names the leader Lease without importing the operator.
func TestLeaderElectionID(t *testing.T) {
	if want := app.DefaultOptions().LeaderElectionID; LeaderElectionID != want {
		t.Errorf("LeaderElectionID %q, the operator's %q", LeaderElectionID, want)
	}
}

func TestSkipped(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "",
		errors.New(`User "alice" cannot list resource "deployments" in API group "apps" at the cluster scope`))
	got := skipped("operator", forbidden, "list", "deployments.apps")
	want := Check{Name: "operator", Status: Skip, Message: `(forbidden: user "alice" may not list deployments.apps at the cluster scope)`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("forbidden (-want +got):\n%s", diff)
	}
	got = skipped("policies", apierrors.NewServiceUnavailable("etcd is down"), "list", "validatingadmissionpolicies")
	want = Check{Name: "policies", Status: Fail, Message: "cannot list validatingadmissionpolicies: etcd is down"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("other errors fail (-want +got):\n%s", diff)
	}
}
