package userdeployment

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// privilegedApp has a service "web" that asks for privilege three ways and
// a plain service "api".
func privilegedApp() *schedv1.UserDeployment {
	return app().Service("web", "web:1", 80, schedv1.ExposurePublic).Service("api", "api:1", 8080, schedv1.ExposureInternal).
		ServicePodAnnotation("web", "container.apparmor.security.beta.kubernetes.io/web", "unconfined").
		ServicePodAnnotation("web", "team", "shop").
		EditService("web", func(s *schedv1.ServiceSpec) {
			s.SecurityContext = &schedv1.SecurityContext{Privileged: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true)}
			s.ReadinessProbe = &schedv1.Probe{HTTPGet: &schedv1.HTTPGetAction{Host: "169.254.169.254", Port: intstr.FromInt32(80)}}
		}).Obj()
}

func TestPrivilegeAsked(t *testing.T) {
	want := map[string][]string{"web": {
		"spec.services[web].securityContext.privileged",
		"spec.services[web].podMetadata.annotations[container.apparmor.security.beta.kubernetes.io/web]",
		"spec.services[web].readinessProbe.httpGet.host",
	}}
	if diff := cmp.Diff(want, privilegeAsked(privilegedApp())); diff != "" {
		t.Errorf("privilegeAsked (-want +got):\n%s", diff)
	}
}

// A service its namespace no longer allows runs no pods, and its template
// keeps nothing privileged that could be scaled up again; the other
// services are left alone and the app's spec is not touched.
func TestWithoutPrivilege(t *testing.T) {
	ud := privilegedApp()
	before := ud.DeepCopy()
	p := buildPlan(withoutPrivilege(ud, privilegeAsked(ud), testSettings.AllowedPodAnnotationDomains), testSettings, apis{})
	if diff := cmp.Diff(before, ud); diff != "" {
		t.Errorf("withoutPrivilege changed the app (-before +after):\n%s", diff)
	}

	web := p.deployments["web"]
	if ptr.Deref(web.Spec.Replicas, -1) != 0 {
		t.Errorf("web replicas %v, want 0", web.Spec.Replicas)
	}
	tmpl := web.Spec.Template
	if diff := cmp.Diff(podsecurity.Container(nil), tmpl.Spec.Containers[0].SecurityContext); diff != "" {
		t.Errorf("web security context is not the restricted default (-want +got):\n%s", diff)
	}
	if _, ok := tmpl.Annotations["container.apparmor.security.beta.kubernetes.io/web"]; ok || tmpl.Annotations["team"] != "shop" {
		t.Errorf("web pod annotations %v, want the AppArmor one gone and the rest kept", tmpl.Annotations)
	}
	if probe := tmpl.Spec.Containers[0].ReadinessProbe; probe == nil || probe.HTTPGet.Host != "" {
		t.Errorf("web readiness probe %+v, want it aimed at the pod", probe)
	}
	if got := podsecurity.Violations("template", podsecurity.Spec{
		SecurityContext: tmpl.Spec.Containers[0].SecurityContext, Annotations: tmpl.Annotations,
		Probes: map[string]*corev1.Probe{"readinessProbe": tmpl.Spec.Containers[0].ReadinessProbe},
	}); len(got) != 0 {
		t.Errorf("web's template still asks for %v", got)
	}

	if diff := cmp.Diff(buildPlan(ud, testSettings, apis{}).deployments["api"], p.deployments["api"]); diff != "" {
		t.Errorf("api changed (-want +got):\n%s", diff)
	}
}

func TestStatusOfAServiceNotAllowed(t *testing.T) {
	ud := privilegedApp()
	p := buildPlan(withoutPrivilege(ud, privilegeAsked(ud), testSettings.AllowedPodAnnotationDomains), testSettings, apis{})
	p.notAllowed = map[string]cause{"web": {schedv1.ReasonPrivilegedNotAllowed, "not started: spec.services[web].securityContext.privileged: not allowed"}}
	st := computeStatus(ud, p, observed{deployments: map[string]*appsv1.Deployment{"web": deployment("web", 0, 0), "api": deployment("api", 1, 1)}})
	if st.Phase != schedv1.UserDeploymentDegraded {
		t.Errorf("phase %s, want Degraded", st.Phase)
	}
	c := meta.FindStatusCondition(st.Conditions, schedv1.ConditionDegraded)
	if c == nil {
		t.Fatalf("no Degraded condition: %+v", st.Conditions)
	}
	if c.Reason != schedv1.ReasonPrivilegedNotAllowed || !strings.Contains(c.Message, "service web: not started: spec.services[web].securityContext.privileged") {
		t.Errorf("Degraded %s %q, want %s naming the service and field", c.Reason, c.Message, schedv1.ReasonPrivilegedNotAllowed)
	}
	if st.Services[0].DesiredReplicas != 0 || st.Services[1].DesiredReplicas != 1 {
		t.Errorf("services %+v, want web at 0 and api at 1", st.Services)
	}
}

// A service passing a pod annotation of a domain the settings do not allow
// (admitted before the setting, or where its policy is missing) runs no
// pods and keeps no such annotation in its template; the app is Degraded
// naming it, and its other services run on.
func TestAnnotationOfAnotherDomain(t *testing.T) {
	ud := app().Service("web", "web:1", 80, schedv1.ExposurePublic).Service("api", "api:1", 8080, schedv1.ExposureInternal).
		ServicePodAnnotation("web", "k8s.v1.cni.cncf.io/networks", "macvlan-conf").
		ServicePodAnnotation("web", "team", "shop").
		ServicePodAnnotation("api", "sim.kubectl-sched.dev/ready", "true").Obj()
	s := testSettings
	s.AllowedPodAnnotationDomains = []string{"kubectl-sched.dev"}
	r := &Reconciler{Settings: s}
	p, err := r.planFor(t.Context(), ud, apis{})
	if err != nil {
		t.Fatal(err)
	}
	web := p.deployments["web"]
	if ptr.Deref(web.Spec.Replicas, -1) != 0 {
		t.Errorf("web replicas %v, want 0", web.Spec.Replicas)
	}
	if a := web.Spec.Template.Annotations; a["k8s.v1.cni.cncf.io/networks"] != "" || a["team"] != "shop" {
		t.Errorf("web pod annotations %v, want the Multus one gone and the rest kept", a)
	}
	if a := p.deployments["api"].Spec.Template.Annotations; a["sim.kubectl-sched.dev/ready"] != "true" || ptr.Deref(p.deployments["api"].Spec.Replicas, -1) != 1 {
		t.Errorf("api: annotations %v replicas %v, want it as its spec says", a, p.deployments["api"].Spec.Replicas)
	}
	st := computeStatus(ud, p, observed{deployments: map[string]*appsv1.Deployment{"web": deployment("web", 0, 0), "api": deployment("api", 1, 1)}})
	c := meta.FindStatusCondition(st.Conditions, schedv1.ConditionDegraded)
	if c == nil || c.Reason != schedv1.ReasonAnnotationNotAllowed ||
		!strings.Contains(c.Message, "service web: not started: spec.services[web].podMetadata.annotations[k8s.v1.cni.cncf.io/networks]") ||
		!strings.Contains(c.Message, "--allowed-pod-annotation-domains: kubectl-sched.dev") {
		t.Errorf("Degraded %+v, want %s naming the service, the annotation and the domains allowed", c, schedv1.ReasonAnnotationNotAllowed)
	}
}
