package revision_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/revision"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// shop is a two-service app, with a UID as one read from the API server.
func shop() *UserDeploymentWrapper {
	w := MakeUserDeployment("shop", "team").
		Service("web", "nginx:1.25", 80, schedv1.ExposurePublic).Replicas("web", 2).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).
		Config("MODE", "fast")
	w.UID = types.UID("uid-shop")
	return w
}

// TestTemplateFields: which fields a revision records is explicit; a field
// added to the API later is recorded unless it is added to the list of
// those left out, and this test names it either way.
func TestTemplateFields(t *testing.T) {
	app, service := revision.TemplateFields()
	wantApp := []string{"services", "config", "secrets", "placement"}
	wantService := []string{"name", "image", "command", "args", "ports", "env", "resources", "readinessProbe", "livenessProbe",
		"podMetadata", "serviceAccountName", "securityContext", "imagePullSecrets"}
	if diff := cmp.Diff(wantApp, app); diff != "" {
		t.Errorf("app fields a revision records (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantService, service); diff != "" {
		t.Errorf("service fields a revision records (-want +got):\n%s", diff)
	}
}

// TestWhatMakesARevision: a change to what the pods run changes the hash;
// scaling, exposing, restarting, stopping and the revision settings do
// not.
func TestWhatMakesARevision(t *testing.T) {
	base := revision.Hash(revision.Of(shop().Obj()))
	for name, tc := range map[string]struct {
		edit func(*UserDeploymentWrapper)
		same bool
	}{
		"image": {edit: func(w *UserDeploymentWrapper) { w.UserDeployment.Spec.Services[0].Image = "nginx:1.27" }},
		"env": {edit: func(w *UserDeploymentWrapper) {
			w.UserDeployment.Spec.Services[1].Env = []schedv1.EnvVar{{Name: "A", Value: "1"}}
		}},
		"command": {edit: func(w *UserDeploymentWrapper) { w.UserDeployment.Spec.Services[1].Command = []string{"serve"} }},
		"args":    {edit: func(w *UserDeploymentWrapper) { w.UserDeployment.Spec.Services[1].Args = []string{"--fast"} }},
		"resources": {edit: func(w *UserDeploymentWrapper) {
			w.UserDeployment.Spec.Services[1].Resources.Requests = corev1.ResourceList{"cpu": resource.MustParse("1")}
		}},
		"config":           {edit: func(w *UserDeploymentWrapper) { w.UserDeployment.Spec.Config["MODE"] = "slow" }},
		"secret reference": {edit: func(w *UserDeploymentWrapper) { w.SecretRef("db", "shop-db") }},
		"secret values": {edit: func(w *UserDeploymentWrapper) {
			w.Annotations = map[string]string{schedv1.AnnotationSecretHash: "abc"}
		}},
		"placement": {edit: func(w *UserDeploymentWrapper) {
			w.UserDeployment.Spec.Placement = &schedv1.Placement{CPUScheduler: "scx_lavd"}
		}},
		"pod annotation": {edit: func(w *UserDeploymentWrapper) { w.ServicePodAnnotation("web", "a", "b") }},
		"a new service":  {edit: func(w *UserDeploymentWrapper) { w.Service("worker", "worker:1", 0, schedv1.ExposureNone) }},
		"replicas":       {edit: func(w *UserDeploymentWrapper) { w.Replicas("web", 5) }, same: true},
		"exposure":       {edit: func(w *UserDeploymentWrapper) { w.UserDeployment.Spec.Services[1].Exposure = schedv1.ExposurePublic }, same: true},
		"ingress":        {edit: func(w *UserDeploymentWrapper) { w.Ingress("shop.example.com") }, same: true},
		"state":          {edit: func(w *UserDeploymentWrapper) { w.State(schedv1.StateStopped) }, same: true},
		"a restart":      {edit: func(w *UserDeploymentWrapper) { w.UserDeployment.Spec.RestartedAt = map[string]string{"web": "now"} }, same: true},
		"the history":    {edit: func(w *UserDeploymentWrapper) { w.UserDeployment.Spec.RevisionHistoryLimit = ptr.To[int32](3) }, same: true},
		"the rollback":   {edit: func(w *UserDeploymentWrapper) { w.UserDeployment.Spec.Rollback = schedv1.RollbackOnDegraded }, same: true},
		"other metadata": {edit: func(w *UserDeploymentWrapper) { w.Labels = map[string]string{"team": "a"} }, same: true},
		"the deadline": {edit: func(w *UserDeploymentWrapper) {
			w.UserDeployment.Spec.ProgressDeadline = &metav1.Duration{Duration: time.Minute}
		}, same: true},
		"network": {edit: func(w *UserDeploymentWrapper) { w.Isolation(schedv1.IsolationOpen) }, same: true},
	} {
		t.Run(name, func(t *testing.T) {
			w := shop()
			tc.edit(w)
			if got := revision.Hash(revision.Of(w.Obj())) == base; got != tc.same {
				t.Errorf("same revision: %v, want %v", got, tc.same)
			}
		})
	}
}

func TestNameAndNumber(t *testing.T) {
	if got := revision.Name("shop", 12); got != "shop.v12" {
		t.Errorf("Name = %q", got)
	}
	long := strings.Repeat("a", 50)
	if got := revision.Name(long, revision.MaxNumber); len(got) != 63 {
		t.Errorf("the longest name has %d characters, want 63", len(got))
	}
	for name, want := range map[string]int64{
		"shop.v1": 1, "shop.v12": 12, "shop.v99999999999": revision.MaxNumber,
		"shop.v0": 0, "shop.v01": 0, "shop.v": 0, "shop.v1x": 0, "shop.v-1": 0, "shop.v100000000000": 0,
		"shop-v1": 0, "shop.v1.v2": 0, "other.v1": 0, "shop.api.v1": 0, "shop.v+1": 0,
	} {
		n, ok := revision.Number("shop", name)
		if ok != (want > 0) || n != want && want > 0 {
			t.Errorf("Number(shop, %q) = %d, %v; want %d", name, n, ok, want)
		}
	}
}

// TestRestore: the services both have get the revision's template and
// keep their replicas, exposure and volumes; the others are left alone;
// the app's template fields are the revision's, the rest the spec's.
func TestRestore(t *testing.T) {
	old := shop().EditService("api", func(s *schedv1.ServiceSpec) {
		s.Env = []schedv1.EnvVar{{Name: "LOG", Value: "debug"}}
	}).Service("cron", "cron:1", 0, schedv1.ExposureNone).Obj()
	tmpl := revision.Of(old)

	cur := shop().Replicas("web", 7).Ingress("shop.example.com").
		EditService("web", func(s *schedv1.ServiceSpec) { s.Image = "nginx:1.27"; s.Command = []string{"nginx", "-g"} }).
		Service("worker", "worker:2", 0, schedv1.ExposureNone).
		Spec(func(s *schedv1.UserDeploymentSpec) {
			s.Config = map[string]string{"MODE": "slow"}
			s.Rollback = schedv1.RollbackOnDegraded
			s.RestartedAt = map[string]string{"web": "t1"}
		}).Obj()

	got, notes := revision.Restore(cur.Spec, tmpl)
	want := shop().Replicas("web", 7).Ingress("shop.example.com").
		EditService("api", func(s *schedv1.ServiceSpec) { s.Env = []schedv1.EnvVar{{Name: "LOG", Value: "debug"}} }).
		Service("worker", "worker:2", 0, schedv1.ExposureNone).
		Spec(func(s *schedv1.UserDeploymentSpec) {
			s.Rollback = schedv1.RollbackOnDegraded
			s.RestartedAt = map[string]string{"web": "t1"}
		}).Obj().Spec
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restored spec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(revision.Notes{Kept: []string{"worker"}, NotRestored: []string{"cron"}}, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	// Restoring a revision into the spec it came from changes nothing.
	if back, _ := revision.Restore(old.Spec, tmpl); !cmp.Equal(old.Spec, back) {
		t.Errorf("restoring a spec's own revision changed it:\n%s", cmp.Diff(old.Spec, back))
	}
}

// TestSummary is what `kubectl sched history` says each revision changed.
func TestSummary(t *testing.T) {
	tmpl := func(edit func(*UserDeploymentWrapper)) revision.Template {
		w := shop()
		if edit != nil {
			edit(w)
		}
		return revision.Of(w.Obj())
	}
	base := tmpl(nil)
	for name, tc := range map[string]struct {
		prev *revision.Template
		cur  revision.Template
		want string
	}{
		"first": {nil, base, "first revision: web nginx:1.25, api api:1"},
		"image": {&base, tmpl(func(w *UserDeploymentWrapper) { w.UserDeployment.Spec.Services[0].Image = "nginx:1.27" }), "web: image nginx:1.25 → nginx:1.27"},
		"images of two services, and config": {&base, tmpl(func(w *UserDeploymentWrapper) {
			w.UserDeployment.Spec.Services[0].Image, w.UserDeployment.Spec.Services[1].Image = "nginx:1.27", "api:2"
			w.UserDeployment.Spec.Config = map[string]string{"MODE": "slow", "NEW": "1"}
		}), "web: image nginx:1.25 → nginx:1.27; api: image api:1 → api:2; config (NEW added, MODE changed)"},
		"env by name, values hidden": {
			ptr.To(tmpl(func(w *UserDeploymentWrapper) {
				w.UserDeployment.Spec.Services[1].Env = []schedv1.EnvVar{{Name: "A", Value: "secret-ish"}, {Name: "B", Value: "1"}, {Name: "C", Value: "1"}}
			})),
			tmpl(func(w *UserDeploymentWrapper) {
				w.UserDeployment.Spec.Services[1].Env = []schedv1.EnvVar{{Name: "A", Value: "other"}, {Name: "C", Value: "1"}, {Name: "D", Value: "1"}}
			}),
			"api: env (D added, B removed, A changed)"},
		"several fields of one service": {&base, tmpl(func(w *UserDeploymentWrapper) {
			w.UserDeployment.Spec.Services[1].Command = []string{"serve"}
			w.UserDeployment.Spec.Services[1].ServiceAccountName = "reader"
			w.UserDeployment.Spec.Services[1].Resources.Limits = corev1.ResourceList{"memory": resource.MustParse("1Gi")}
		}), "api: command changed, resources changed, serviceAccountName <none> → reader"},
		"services added and removed": {&base, tmpl(func(w *UserDeploymentWrapper) {
			w.UserDeployment.Spec.Services = w.UserDeployment.Spec.Services[:1]
			w.Service("worker", "worker:1", 0, schedv1.ExposureNone)
		}), "worker: added (image worker:1); api: removed"},
		"placement by its fields": {
			ptr.To(tmpl(func(w *UserDeploymentWrapper) { w.Placement(schedv1.Placement{Priority: schedv1.PriorityHigh}) })),
			tmpl(func(w *UserDeploymentWrapper) {
				w.Placement(schedv1.Placement{Priority: schedv1.PriorityLow, NodePools: []string{"general"}})
			}),
			"placement (priority High → Low, nodePools changed)"},
		"placement added": {&base, tmpl(func(w *UserDeploymentWrapper) { w.Placement(schedv1.Placement{MultiZone: true}) }), "placement added"},
		"secrets by name": {&base, tmpl(func(w *UserDeploymentWrapper) { w.SecretRef("db", "shop-db") }), "secrets (db added)"},
		"secret values":   {&base, tmpl(func(w *UserDeploymentWrapper) { w.Annotations = map[string]string{schedv1.AnnotationSecretHash: "x"} }), "secret values changed"},
		"pod labels": {&base, tmpl(func(w *UserDeploymentWrapper) { w.ServicePodAnnotation("web", "team", "a") }),
			"web: podMetadata added"},
		"a probe's field": {
			ptr.To(tmpl(func(w *UserDeploymentWrapper) {
				w.UserDeployment.Spec.Services[0].ReadinessProbe = &schedv1.Probe{HTTPGet: &schedv1.HTTPGetAction{Path: "/a", Port: intstr.FromInt32(80)}}
			})),
			tmpl(func(w *UserDeploymentWrapper) {
				w.UserDeployment.Spec.Services[0].ReadinessProbe = &schedv1.Probe{HTTPGet: &schedv1.HTTPGetAction{Path: "/b", Port: intstr.FromInt32(80)}}
			}),
			"web: readinessProbe (httpGet (path /a → /b))"},
		"nothing a revision records": {&base, tmpl(func(w *UserDeploymentWrapper) { w.Replicas("web", 9) }), "no change"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := revision.Summary(tc.prev, tc.cur); got != tc.want {
				t.Errorf("Summary =\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
}

// TestCheck: only what the operator would have made for this app, by its
// metadata.
func TestCheck(t *testing.T) {
	ud := shop().Obj()
	good := revision.New(ud, 3, revision.Of(ud), "kubectl-sched")
	good.Namespace = ud.Namespace
	if why := revision.Check(good, ud); why != "" {
		t.Fatalf("the operator's own revision: %s", why)
	}
	for name, edit := range map[string]func(*appsv1.ControllerRevision){
		"another namespace":        func(cr *appsv1.ControllerRevision) { cr.Namespace = "other" },
		"no controller":            func(cr *appsv1.ControllerRevision) { cr.OwnerReferences[0].Controller = nil },
		"another app's UID":        func(cr *appsv1.ControllerRevision) { cr.OwnerReferences[0].UID = "uid-other" },
		"another kind":             func(cr *appsv1.ControllerRevision) { cr.OwnerReferences[0].Kind = "StatefulSet" },
		"not the managed-by":       func(cr *appsv1.ControllerRevision) { delete(cr.Labels, schedv1.LabelManagedBy) },
		"another app's label":      func(cr *appsv1.ControllerRevision) { cr.Labels[schedv1.LabelUserDeployment] = "other" },
		"no hash":                  func(cr *appsv1.ControllerRevision) { delete(cr.Labels, schedv1.LabelRevisionHash) },
		"a hash that is not one":   func(cr *appsv1.ControllerRevision) { cr.Labels[schedv1.LabelRevisionHash] = "xyz" },
		"renumbered":               func(cr *appsv1.ControllerRevision) { cr.Revision = 9 },
		"named for another app":    func(cr *appsv1.ControllerRevision) { cr.Name = "other.v3" },
		"named as a StatefulSet's": func(cr *appsv1.ControllerRevision) { cr.Name = "shop-web-7d4b9c" },
	} {
		t.Run(name, func(t *testing.T) {
			cr := good.DeepCopy()
			edit(cr)
			if why := revision.Check(cr, ud); why == "" {
				t.Error("trusted")
			}
		})
	}
}

// TestRead: the data must be a template, bounded, hashing to its label.
func TestRead(t *testing.T) {
	ud := shop().Obj()
	tmpl := revision.Of(ud)
	good := revision.New(ud, 1, tmpl, "")
	got, err := revision.Read(good)
	if err != nil || !cmp.Equal(tmpl, got) {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	// Spaces and key order are the client's; the content is what counts.
	spaced := good.DeepCopy()
	spaced.Data.Raw = []byte(" " + strings.Replace(string(good.Data.Raw), `"spec":`, `"spec" : `, 1) + "\n")
	if _, err := revision.Read(spaced); err != nil {
		t.Errorf("the same data with spaces: %v", err)
	}
	other := shop().EditService("web", func(s *schedv1.ServiceSpec) { s.Image = "evil:1" }).Obj()
	for name, data := range map[string]string{
		"another template under the label": string(revision.Encode(revision.Of(other))),
		"an unknown field":                 strings.Replace(string(good.Data.Raw), `"spec":{`, `"spec":{"x":1,`, 1),
		"a duplicate field":                strings.Replace(string(good.Data.Raw), `"spec":{`, `"spec":{"config":{},`, 1),
		"a field a revision leaves out":    strings.Replace(string(good.Data.Raw), `"spec":{`, `"spec":{"state":"Stopped",`, 1),
		"another annotation":               strings.Replace(string(good.Data.Raw), `{"spec"`, `{"metadata":{"annotations":{"a":"b"}},"spec"`, 1),
		"oversize":                         `{"spec":{"config":{"a":"` + strings.Repeat("x", revision.MaxData) + `"}}}`,
		"not JSON":                         "nope",
	} {
		t.Run(name, func(t *testing.T) {
			cr := good.DeepCopy()
			cr.Data.Raw = []byte(data)
			if _, err := revision.Read(cr); err == nil {
				t.Error("read as a revision")
			}
		})
	}
}

// TestChangedBy: the manager that last changed a field a revision records,
// not one that changed something else later, nor the status writer.
func TestChangedBy(t *testing.T) {
	at := func(min int) *metav1.Time {
		return &metav1.Time{Time: time.Date(2026, 11, 26, 12, min, 0, 0, time.UTC)}
	}
	entry := func(manager string, min int, fields string, sub string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, Time: at(min), FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(fields), Subresource: sub}
	}
	image := `{"f:spec":{"f:services":{"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:image":{}}}}}`
	replicas := `{"f:spec":{"f:services":{"k:{\"name\":\"web\"}":{"f:replicas":{}}}}}`
	labels := `{"f:metadata":{"f:labels":{"f:team":{}}}}`
	secret := `{"f:metadata":{"f:annotations":{"f:sched.kubectl-sched.dev/secret-hash":{}}}}`
	config := `{"f:spec":{"f:config":{"f:MODE":{}}}}`
	status := `{"f:status":{"f:phase":{}}}`
	for name, tc := range map[string]struct {
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		"the only one":              {[]metav1.ManagedFieldsEntry{entry("kubectl-sched", 1, image, "")}, "kubectl-sched"},
		"the later of two":          {[]metav1.ManagedFieldsEntry{entry("kubectl-edit", 5, image, ""), entry("kubectl-sched", 1, image, "")}, "kubectl-edit"},
		"not a later scale":         {[]metav1.ManagedFieldsEntry{entry("kubectl-sched", 1, image, ""), entry("kubectl-scale", 9, replicas, "")}, "kubectl-sched"},
		"not a later label":         {[]metav1.ManagedFieldsEntry{entry("kubectl-sched", 1, image, ""), entry("kubectl-label", 9, labels, "")}, "kubectl-sched"},
		"not the status":            {[]metav1.ManagedFieldsEntry{entry("kubectl-sched", 1, image, ""), entry("kubectl-sched-operator", 9, status, "status")}, "kubectl-sched"},
		"the secret hash":           {[]metav1.ManagedFieldsEntry{entry("kubectl-sched", 1, image, ""), entry("deployer", 3, secret, "")}, "deployer"},
		"the config":                {[]metav1.ManagedFieldsEntry{entry("kubectl-sched", 1, image, ""), entry("argocd-controller", 4, config, "")}, "argocd-controller"},
		"nobody":                    {nil, ""},
		"fields that do not decode": {[]metav1.ManagedFieldsEntry{entry("x", 1, "{", "")}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			ud := shop().Obj()
			ud.ManagedFields = tc.entries
			if got := revision.ChangedBy(ud, nil); got != tc.want {
				t.Errorf("ChangedBy = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestChangedByWhatChanged: with the revision before, the manager that
// owns what changed, even when another changed something else in the same
// second (managed fields keep whole seconds), or later.
func TestChangedByWhatChanged(t *testing.T) {
	at := &metav1.Time{Time: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	later := &metav1.Time{Time: at.Add(time.Minute)}
	entry := func(manager string, when *metav1.Time, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Time: when, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	created := `{"f:spec":{"f:config":{"f:MODE":{}},"f:services":{"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:ports":{}},"k:{\"name\":\"api\"}":{".":{},"f:name":{},"f:image":{},"f:ports":{}}}}}`
	webImage := `{"f:spec":{"f:services":{"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:image":{}}}}}`
	prev := revision.Of(shop().Obj())
	cur := shop().EditService("web", func(s *schedv1.ServiceSpec) { s.Image = "nginx:1.27" }).Obj()
	for name, tc := range map[string]struct {
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		"the same second":                                    {[]metav1.ManagedFieldsEntry{entry("deployer", at, metav1.ManagedFieldsOperationApply, webImage), entry("tester", at, metav1.ManagedFieldsOperationUpdate, created)}, "deployer"},
		"a later change of something else":                   {[]metav1.ManagedFieldsEntry{entry("deployer", at, metav1.ManagedFieldsOperationApply, webImage), entry("tester", later, metav1.ManagedFieldsOperationUpdate, created)}, "deployer"},
		"nobody owns it any more: whoever owns the template": {[]metav1.ManagedFieldsEntry{entry("tester", at, metav1.ManagedFieldsOperationUpdate, created)}, "tester"},
	} {
		t.Run(name, func(t *testing.T) {
			ud := cur.DeepCopy()
			ud.ManagedFields = tc.entries
			if got := revision.ChangedBy(ud, &prev); got != tc.want {
				t.Errorf("ChangedBy = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestChangedFields: what changed, field by field, as the managed fields
// name them.
func TestChangedFields(t *testing.T) {
	prev := revision.Of(shop().Obj())
	cur := revision.Of(shop().EditService("web", func(s *schedv1.ServiceSpec) { s.Image = "nginx:1.27" }).
		Service("worker", "worker:1", 0, schedv1.ExposureNone).Config("NEW", "1").
		Meta(func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{schedv1.AnnotationSecretHash: "h"} }).Obj())
	cur.Spec.Services = slices.DeleteFunc(cur.Spec.Services, func(s schedv1.ServiceSpec) bool { return s.Name == "api" })
	got := revision.ChangedFields(prev, cur)
	want := []revision.Field{{Service: "web", Name: "image"}, {Service: "worker"}, {Service: "api"}, {Name: "config"}, {SecretHash: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ChangedFields (-want +got):\n%s", diff)
	}
	var names []string
	for _, f := range got {
		names = append(names, f.String())
	}
	if s := strings.Join(names, "; "); s != "service web image; service worker; service api; spec.config; metadata.annotations[sched.kubectl-sched.dev/secret-hash]" {
		t.Errorf("names: %s", s)
	}
}
