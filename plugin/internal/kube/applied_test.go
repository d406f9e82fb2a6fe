package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// live is an app as the API server returns it: kubectl-sched applied most
// of it, someone else added an env var and a label with a merge patch, the
// server defaulted exposure and protocol, and the operator wrote status.
const live = `
apiVersion: sched.kubectl-sched.dev/v1alpha1
kind: UserDeployment
metadata:
  name: shop
  namespace: team
  resourceVersion: "42"
  labels: {team: pay, tier: gold}
  annotations: {sched.kubectl-sched.dev/template: web-app}
  managedFields:
  - manager: kubectl-sched
    operation: Apply
    apiVersion: sched.kubectl-sched.dev/v1alpha1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:annotations: {f:sched.kubectl-sched.dev/template: {}}
        f:labels: {f:tier: {}}
      f:spec:
        f:config: {f:MODE: {}}
        f:ingress: {}
        f:placement: {f:nodePools: {v:"general": {}}}
        f:services:
          k:{"name":"web"}:
            .: {}
            f:name: {}
            f:image: {}
            f:command: {}
            f:env:
              k:{"name":"A"}: {.: {}, f:name: {}, f:value: {}}
              k:{"name":"POD"}: {.: {}, f:name: {}, f:valueFrom: {.: {}, f:fieldRef: {}}}
            f:ports:
              k:{"port":80}: {.: {}, f:name: {}, f:port: {}}
          k:{"name":"api"}:
            .: {}
            f:name: {}
            f:image: {}
            f:replicas: {}
  - manager: someone
    operation: Update
    apiVersion: sched.kubectl-sched.dev/v1alpha1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata: {f:labels: {f:team: {}}}
      f:spec:
        f:services:
          k:{"name":"web"}:
            f:env:
              k:{"name":"B"}: {.: {}, f:name: {}, f:value: {}}
  - manager: kubectl-sched-operator
    operation: Update
    subresource: status
    fieldsType: FieldsV1
    fieldsV1: {f:status: {f:phase: {}}}
spec:
  config: {MODE: fast}
  ingress: {path: /}
  placement: {nodePools: [general, spot]}
  state: Running
  services:
  - name: api
    image: api:1
    replicas: 3
    exposure: Internal
  - name: web
    image: nginx:1.27
    replicas: 1
    command: [nginx, -g, daemon off;]
    exposure: Internal
    env:
    - {name: A, value: "1"}
    - {name: B, value: "2"}
    - {name: POD, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: metadata.name}}}
    ports:
    - {name: http, port: 80, protocol: TCP}
status:
  phase: Running
`

func liveObject(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(live), &u.Object); err != nil {
		t.Fatal(err)
	}
	// As the API server's JSON decodes into unstructured: integers are int64.
	return roundTrip(t, u)
}

func roundTrip(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	data, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestApplied(t *testing.T) {
	got, err := Applied(liveObject(t), FieldManager)
	if err != nil {
		t.Fatal(err)
	}
	want := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: sched.kubectl-sched.dev/v1alpha1
kind: UserDeployment
metadata:
  name: shop
  namespace: team
  labels: {tier: gold}
  annotations: {sched.kubectl-sched.dev/template: web-app}
spec:
  config: {MODE: fast}
  # Applied empty: its defaulted path is no one's.
  ingress: {}
  placement: {nodePools: [general]}
  services:
  - name: api
    image: api:1
    replicas: 3
  - name: web
    image: nginx:1.27
    command: [nginx, -g, daemon off;]
    env:
    - {name: A, value: "1"}
    # An atomic map is owned whole, its defaulted apiVersion too.
    - {name: POD, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: metadata.name}}}
    ports:
    - {name: http, port: 80}
`), &want.Object); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(roundTrip(t, want).Object, got.Object); diff != "" {
		t.Errorf("Applied (-want +got):\n%s", diff)
	}

	// A manager with no apply entry applied nothing.
	none, err := Applied(liveObject(t), "someone")
	if err != nil {
		t.Fatal(err)
	}
	if _, has := none.Object["spec"]; has || none.GetName() != "shop" || none.GetKind() != "UserDeployment" {
		t.Errorf("someone's apply: %v", none.Object)
	}
}

func TestManagers(t *testing.T) {
	obj := liveObject(t)
	svc := []PathElement{Field("spec"), Field("services"), Item("name", "web")}
	cases := map[string]struct {
		path []PathElement
		want []string
	}{
		"the service":          {path: svc, want: []string{"kubectl-sched", "someone (update)"}},
		"an env var applied":   {path: append(svc[:3:3], Field("env"), Item("name", "A")), want: []string{"kubectl-sched"}},
		"an env var patched":   {path: append(svc[:3:3], Field("env"), Item("name", "B")), want: []string{"someone (update)"}},
		"a port, keyed by int": {path: append(svc[:3:3], Field("ports"), Item("port", 80)), want: []string{"kubectl-sched"}},
		"defaulted":            {path: append(svc[:3:3], Field("exposure"))},
		"status is not spec":   {path: []PathElement{Field("status")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Managers(obj, tc.path...)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
