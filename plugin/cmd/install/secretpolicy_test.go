package install_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

const esPolicy = "kubectl-sched-external-secret-keys"

func externalSecret(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
}

func pushSecret(ns, name string, spec map[string]any) *unstructured.Unstructured {
	spec["selector"] = map[string]any{"secret": map[string]any{"name": "source"}}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1alpha1", "kind": "PushSecret",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
}

var clusterStore = map[string]any{"kind": "ClusterSecretStore", "name": "vault"}

// reads is an ExternalSecret spec reading key from the shared store.
func reads(key string) map[string]any {
	return map[string]any{"secretStoreRef": clusterStore, "data": []any{
		map[string]any{"secretKey": "db", "remoteRef": map[string]any{"key": key}},
	}}
}

func readsFrom(entry map[string]any) map[string]any {
	return map[string]any{"secretStoreRef": clusterStore, "dataFrom": []any{entry}}
}

// TestExternalSecretsPolicy: where External Secrets is served, install adds
// the key policy, and then no namespace user reaches another namespace's
// keys of a ClusterSecretStore with an ExternalSecret or PushSecret of
// their own, not only through the operator.
func TestExternalSecretsPolicy(t *testing.T) {
	ctx := context.Background()
	crds := envtest.CRDInstallOptions{Paths: []string{"testdata/external-secrets-crds.yaml"}, ErrorIfPathMissing: true}
	if _, err := envtest.InstallCRDs(bare.Config, crds); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = envtest.UninstallCRDs(bare.Config, crds) })

	// Namespaces of their own: an uninstalled namespace stays Terminating
	// here, where no controller manager finishes it.
	at := []string{"-n", "es-operator", "--scheduler-namespace", "es-schedulers"}
	// No store configured: the policy comes because the API is served.
	res := runAs(kubeconfig, append([]string{"install", "--without-operator", "-o", "name"}, at...)...)
	if res.Code != 0 || !strings.Contains(res.Stdout, "validatingadmissionpolicy.admissionregistration.k8s.io/"+esPolicy+"\n") {
		t.Fatalf("exit %d, want the External Secrets policy installed:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	t.Cleanup(func() {
		if res := runAs(kubeconfig, append([]string{"uninstall", "--yes"}, at...)...); res.Code != 0 || !strings.Contains(res.Stdout, esPolicy) {
			t.Errorf("uninstall: exit %d, want the policy deleted:\n%s%s", res.Code, res.Stdout, res.Stderr)
		}
	})

	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "test-external-secrets-edit"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"external-secrets.io"}, Resources: []string{"externalsecrets", "pushsecrets"},
			Verbs: []string{"get", "create", "update", "patch", "delete"}}},
	}
	if err := bareClient.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bareClient.Delete(context.Background(), role) })
	users := map[string]client.Client{}
	for ns, labels := range map[string]map[string]string{
		"team-a":   nil,
		"secret":   nil, // named like the store's mount (the default reserved path)
		"platform": {"sched.kubectl-sched.dev/allow-any-secret-key": "true"},
	} {
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}
		if err := bareClient.Create(ctx, nsObj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bareClient.Delete(context.Background(), nsObj) })
		c, err := testenv.BindUser(ctx, bareClient, bare.Config, ns, ns+"-user", role.Name,
			authorizationv1.ResourceAttributes{Verb: "create", Group: "external-secrets.io", Resource: "externalsecrets"})
		if err != nil {
			t.Fatal(err)
		}
		users[ns] = c
	}
	alice := users["team-a"]
	refusedAs := func(c client.Client, obj client.Object, want ...string) error {
		err := c.Create(ctx, obj, client.DryRunAll)
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("err = %v, want forbidden", err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				return fmt.Errorf("err = %v, want it to say %q", err, w)
			}
		}
		return nil
	}
	// Policies take effect asynchronously.
	var last error
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = refusedAs(alice, externalSecret("team-a", "probe", reads("team-b/db")))
		return last == nil, nil
	})
	if last != nil {
		t.Errorf("the policy is not enforced: %v", last)
	}

	const mustStart = `must start with "team-a/"`
	for name, tc := range map[string]struct {
		as   client.Client
		obj  client.Object
		want []string
	}{
		"another namespace's key":        {alice, externalSecret("team-a", "es", reads("team-b/db")), []string{`spec.data[db].remoteRef.key "team-b/db"`, mustStart}},
		"a namespace sharing the prefix": {alice, externalSecret("team-a", "es", reads("team-ab/db")), []string{`"team-ab/db"`, mustStart}},
		"climbing out with ..":           {alice, externalSecret("team-a", "es", reads("team-a/../team-b/db")), []string{`"team-a/../team-b/db"`, `no ".." segment`}},
		"extracting another's key":       {alice, externalSecret("team-a", "es", readsFrom(map[string]any{"extract": map[string]any{"key": "team-b/db"}})), []string{`spec.dataFrom[].extract.key "team-b/db"`}},
		"finding over the whole store":   {alice, externalSecret("team-a", "es", readsFrom(map[string]any{"find": map[string]any{"name": map[string]any{"regexp": ".*"}}})), []string{`spec.dataFrom[].find.path ""`, "a find needs a path under it"}},
		"finding under another's path":   {alice, externalSecret("team-a", "es", readsFrom(map[string]any{"find": map[string]any{"path": "team-b/"}})), []string{`spec.dataFrom[].find.path "team-b/"`}},
		"extract and find in one entry": {alice, externalSecret("team-a", "es", readsFrom(map[string]any{"extract": map[string]any{"key": "team-a/app"}, "find": map[string]any{"path": "team-b/"}})),
			[]string{"spec.dataFrom has an entry with extract and find", "each entry may hold only one of extract, find and sourceRef.generatorRef"}},
		"a generator beside an extract": {alice, externalSecret("team-a", "es", readsFrom(map[string]any{"extract": map[string]any{"key": "team-b/app"},
			"sourceRef": map[string]any{"generatorRef": map[string]any{"kind": "Password", "name": "pw"}}})), []string{"an entry with extract and sourceRef.generatorRef"}},
		"a data entry with a generator, reading another's key": {alice, externalSecret("team-a", "es", map[string]any{"secretStoreRef": clusterStore, "data": []any{
			map[string]any{"secretKey": "db", "remoteRef": map[string]any{"key": "team-b/db"}, "sourceRef": map[string]any{"generatorRef": map[string]any{"kind": "Password", "name": "pw"}}}}}),
			[]string{`spec.data[db].remoteRef.key "team-b/db"`, mustStart}},
		"an entry naming the shared store": {alice, externalSecret("team-a", "es", map[string]any{"secretStoreRef": map[string]any{"kind": "SecretStore", "name": "own"}, "data": []any{map[string]any{"secretKey": "db", "remoteRef": map[string]any{"key": "team-b/db"}, "sourceRef": map[string]any{"storeRef": clusterStore}}}}), []string{`spec.data[db].remoteRef.key "team-b/db"`}},
		"pushing into another's key": {alice, pushSecret("team-a", "ps", map[string]any{"secretStoreRefs": []any{clusterStore}, "data": []any{
			map[string]any{"match": map[string]any{"secretKey": "db", "remoteRef": map[string]any{"remoteKey": "team-b/db"}}}}}), []string{`spec.data[].match.remoteRef.remoteKey "team-b/db"`, mustStart}},
		"pushing keys named by a Secret": {alice, pushSecret("team-a", "ps", map[string]any{"secretStoreRefs": []any{clusterStore}, "dataTo": []any{
			map[string]any{"storeRef": clusterStore}}}), []string{"spec.dataTo: a PushSecret to a ClusterSecretStore must name each remote key"}},
		"a namespace named like the mount": {users["secret"], externalSecret("secret", "es", reads("secret/team-b/db")), []string{
			`namespace secret may not use a ClusterSecretStore: its part of the store, "secret/", would cover secret`, "--external-secret-reserved-paths"}},
	} {
		t.Run("refused: "+name, func(t *testing.T) {
			if err := refusedAs(tc.as, tc.obj, tc.want...); err != nil {
				t.Error(err)
			}
		})
	}

	for name, tc := range map[string]struct {
		as  client.Client
		obj client.Object
	}{
		"its own key":                    {alice, externalSecret("team-a", "own", reads("team-a/db"))},
		"its own keys, extracted":        {alice, externalSecret("team-a", "own-extract", readsFrom(map[string]any{"extract": map[string]any{"key": "team-a/app"}}))},
		"a find under its own path":      {alice, externalSecret("team-a", "own-find", readsFrom(map[string]any{"find": map[string]any{"path": "team-a/"}}))},
		"any key of its own SecretStore": {alice, externalSecret("team-a", "own-store", map[string]any{"secretStoreRef": map[string]any{"kind": "SecretStore", "name": "own"}, "data": []any{map[string]any{"secretKey": "db", "remoteRef": map[string]any{"key": "elsewhere/db"}}}})},
		"a generator beside the store":   {alice, externalSecret("team-a", "generated", readsFrom(map[string]any{"sourceRef": map[string]any{"generatorRef": map[string]any{"kind": "Password", "name": "pw"}}}))},
		"pushing into its own key": {alice, pushSecret("team-a", "push", map[string]any{"secretStoreRefs": []any{clusterStore}, "data": []any{
			map[string]any{"match": map[string]any{"secretKey": "db", "remoteRef": map[string]any{"remoteKey": "team-a/out"}}}}})},
		"a namespace an admin exempted": {users["platform"], externalSecret("platform", "shared", reads("shared/registry"))},
	} {
		t.Run("allowed: "+name, func(t *testing.T) {
			if err := tc.as.Create(ctx, tc.obj, client.DryRunAll); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}

	t.Run("refused: an update to another's key", func(t *testing.T) {
		es := externalSecret("team-a", "later", reads("team-a/db"))
		if err := alice.Create(ctx, es); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedSlice(es.Object, []any{map[string]any{"secretKey": "db", "remoteRef": map[string]any{"key": "team-b/db"}}}, "spec", "data"); err != nil {
			t.Fatal(err)
		}
		if err := alice.Update(ctx, es); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"team-b/db"`) {
			t.Errorf("err = %v, want forbidden naming the key", err)
		}
	})

	// The admin's own template reaches the policy on the next install.
	res = runAs(kubeconfig, append([]string{"install", "--without-operator", "--external-secret-key-template", "tenants/{{namespace}}/", "-o", "name"}, at...)...)
	if res.Code != 0 {
		t.Fatalf("exit %d:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = refusedAs(alice, externalSecret("team-a", "old", reads("team-a/db")), `must start with "tenants/team-a/"`)
		return last == nil, nil
	})
	if last != nil {
		t.Errorf("the old prefix is still allowed: %v", last)
	}
	if err := alice.Create(ctx, externalSecret("team-a", "new", reads("tenants/team-a/db")), client.DryRunAll); err != nil {
		t.Errorf("a key under the new prefix: %v", err)
	}
}

// TestExternalSecretsPolicyFlags: the key template is checked, and the
// policy can be asked for before External Secrets is installed.
func TestExternalSecretsPolicyFlags(t *testing.T) {
	res := plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "--external-secret-key-template", "{{namespace}}")
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, `--external-secret-key-template "{{namespace}}" must end in /`) {
		t.Errorf("a template without a trailing slash: exit %d, stderr:\n%s", res.Code, res.Stderr)
	}
	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "--external-secret-key-template", "shared/")
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, "must hold {{namespace}}") {
		t.Errorf("a template without the namespace: exit %d, stderr:\n%s", res.Code, res.Stderr)
	}
	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "--external-secrets-policy", "maybe")
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, "--external-secrets-policy") {
		t.Errorf("a bad --external-secrets-policy: exit %d, stderr:\n%s", res.Code, res.Stderr)
	}
	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "--external-secrets-policy=true", "--external-secret-key-template", "")
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, "needs a key template") {
		t.Errorf("the policy without a template: exit %d, stderr:\n%s", res.Code, res.Stderr)
	}

	// auto: a client dry run asks the cluster nothing, so only a configured
	// store brings the policy there.
	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-o", "name")
	if res.Code != 0 || strings.Contains(res.Stdout, esPolicy) {
		t.Errorf("exit %d, want no External Secrets policy:\n%s", res.Code, res.Stdout)
	}
	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-o", "name", "--cluster-secret-store", "vault")
	if res.Code != 0 || !strings.Contains(res.Stdout, esPolicy) {
		t.Errorf("exit %d, want the External Secrets policy with a store configured:\n%s", res.Code, res.Stdout)
	}
	res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-o", "yaml", "--external-secrets-policy=true",
		"--external-secret-key-template", "tenants/{{namespace}}/", "--external-secret-reserved-paths", "kv/tenants,shared")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	vars := map[string]string{}
	for _, o := range decodeAll(t, strings.NewReader(res.Stdout)) {
		if o.GetKind() != "ValidatingAdmissionPolicy" || o.GetName() != esPolicy {
			continue
		}
		list, _, _ := unstructured.NestedSlice(o.Object, "spec", "variables")
		for _, v := range list {
			m := v.(map[string]any)
			vars[m["name"].(string)] = m["expression"].(string)
		}
	}
	if vars["keyTemplate"] != `"tenants/{{namespace}}/"` || vars["reservedPaths"] != `["kv/tenants", "shared"]` {
		t.Errorf("policy variables %v, want the settings written in", vars)
	}
	if !strings.Contains(res.Stdout, "sched.kubectl-sched.dev/allow-any-secret-key") {
		t.Errorf("the binding does not exempt labelled namespaces")
	}
}

// TestExternalSecretsInstalledLater: External Secrets installed after
// kubectl-sched finds no key policy (install saw no External Secrets);
// doctor says so, naming the policy and why, and install run again adds
// it.
func TestExternalSecretsInstalledLater(t *testing.T) {
	at := []string{"-n", "late-operator", "--scheduler-namespace", "late-schedulers"}
	res := runAs(kubeconfig, append([]string{"install", "--without-operator", "-o", "name"}, at...)...)
	if res.Code != 0 || strings.Contains(res.Stdout, esPolicy) {
		t.Fatalf("exit %d, want no External Secrets policy before External Secrets:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	t.Cleanup(func() {
		if res := runAs(kubeconfig, append([]string{"uninstall", "--yes"}, at...)...); res.Code != 0 {
			t.Errorf("uninstall: exit %d:\n%s%s", res.Code, res.Stdout, res.Stderr)
		}
	})
	// doctor's report read as a script reads it (its JSON is stable).
	type check struct {
		Name, Status, Fix string
		Details           []string
	}
	policies := func() check {
		t.Helper()
		res := runAs(kubeconfig, "doctor", "-o", "json", "--operator-namespace", "late-operator")
		var rep struct{ Checks []check }
		if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
			t.Fatalf("doctor: %v:\n%s%s", err, res.Stdout, res.Stderr)
		}
		for _, c := range rep.Checks {
			if c.Name == "policies" {
				return c
			}
		}
		t.Fatalf("doctor reports no policies check:\n%s", res.Stdout)
		return check{}
	}
	if c := policies(); c.Status != "OK" {
		t.Errorf("before External Secrets: %+v, want OK", c)
	}

	crds := envtest.CRDInstallOptions{Paths: []string{"testdata/external-secrets-crds.yaml"}, ErrorIfPathMissing: true}
	if _, err := envtest.InstallCRDs(bare.Config, crds); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = envtest.UninstallCRDs(bare.Config, crds) })
	c := policies()
	want := "policy " + esPolicy + " missing: External Secrets is served, and without it any namespace's ExternalSecrets read any key of a ClusterSecretStore; install adds it"
	if c.Status != "FAIL" || c.Fix != "kubectl sched install" || !slices.Contains(c.Details, want) {
		t.Errorf("External Secrets installed later: %+v, want FAIL with %q", c, want)
	}

	res = runAs(kubeconfig, append([]string{"install", "--without-operator", "-o", "name"}, at...)...)
	if res.Code != 0 || !strings.Contains(res.Stdout, "validatingadmissionpolicy.admissionregistration.k8s.io/"+esPolicy+"\n") {
		t.Fatalf("install again: exit %d, want the External Secrets policy added:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	if c := policies(); c.Status != "OK" {
		t.Errorf("after install: %+v, want OK", c)
	}
}
