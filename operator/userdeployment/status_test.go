package userdeployment

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// deployment is a Deployment whose status reports ready of want replicas,
// rolled out at its generation when ready == want.
func deployment(svc string, want, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-" + svc, Generation: 1},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(want)},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 1, Replicas: want, UpdatedReplicas: want, ReadyReplicas: ready, AvailableReplicas: ready,
		},
	}
}

func withCondition(d *appsv1.Deployment, c appsv1.DeploymentCondition) *appsv1.Deployment {
	d.Status.Conditions = append(d.Status.Conditions, c)
	return d
}

func pod(name, svc string, mutate func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{schedv1.LabelService: svc}}}
	if mutate != nil {
		mutate(&p)
	}
	return p
}

func waiting(reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "api", Image: "api:bad", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg},
		}}}
	}
}

// testNow is when the tests' observations are made.
var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// since is a LastProgressTime d before testNow.
func since(d time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(testNow.Add(-d))) }

func unschedulable(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."}}
}

// progressed gives ud a status for its generation in which service svc
// last progressed at t with ready replicas ready.
func progressed(ud *schedv1.UserDeployment, svc string, t *metav1.Time, ready int32) *schedv1.UserDeployment {
	ud.Status.ObservedGeneration = ud.Generation
	ud.Status.Services = append(ud.Status.Services, schedv1.ServiceStatus{Name: svc, ReadyReplicas: ready, LastProgressTime: t})
	return ud
}

// noLavd is what cpuSchedulerCause says when nothing loads scx_lavd.
const noLavd = "no node runs the CPU scheduler scx_lavd (placement.cpuScheduler) and no SchedExt loads it: ask a cluster admin to create one (kubectl sched schedext set NAME --sched scx_lavd --nodes LABEL=VALUE)"

type wantCond struct {
	status metav1.ConditionStatus
	reason string
	msg    string
}

func TestComputeStatus(t *testing.T) {
	twoServices := func() *UserDeploymentWrapper {
		return app().Service("web", "web:1", 80, schedv1.ExposurePublic).Service("api", "api:1", 8080, schedv1.ExposureInternal)
	}
	cases := map[string]struct {
		ud          *schedv1.UserDeployment
		apis        apis
		o           observed
		phase       schedv1.UserDeploymentPhase
		ready       string
		services    []schedv1.ServiceStatus
		conditions  map[string]wantCond
		urls        []string
		ignoreNotes bool
	}{
		"nothing created yet": {
			ud:    twoServices().Obj(),
			phase: schedv1.UserDeploymentPending,
			ready: "0/2",
			services: []schedv1.ServiceStatus{
				{Name: "web", DesiredReplicas: 1, Message: "the Deployment is not created yet"},
				{Name: "api", DesiredReplicas: 1, Message: "the Deployment is not created yet"},
			},
			conditions: map[string]wantCond{
				schedv1.ConditionReady:       {metav1.ConditionFalse, schedv1.ReasonPending, "creating the app's objects: 2 Deployment(s) not created yet"},
				schedv1.ConditionProgressing: {metav1.ConditionTrue, schedv1.ReasonReconciling, "creating the app's objects: 2 Deployment(s) not created yet"},
				schedv1.ConditionDegraded:    {metav1.ConditionFalse, schedv1.ReasonAsExpected, "no problem found"},
			},
			urls: []string{"http://shop.ns.apps.test/"},
		},
		"rolling out": {
			ud: twoServices().Replicas("web", 2).Obj(),
			o:  observed{deployments: map[string]*appsv1.Deployment{"web": deployment("web", 2, 1), "api": deployment("api", 1, 1)}},
			services: []schedv1.ServiceStatus{
				{Name: "web", DesiredReplicas: 2, ReadyReplicas: 1, Message: "1/2 replicas ready", LastProgressTime: since(0)},
				{Name: "api", DesiredReplicas: 1, ReadyReplicas: 1},
			},
			phase: schedv1.UserDeploymentProgressing,
			ready: "1/2",
			conditions: map[string]wantCond{
				schedv1.ConditionReady:       {metav1.ConditionFalse, schedv1.ReasonReconciling, "rolling out: web 1/2 replicas ready"},
				schedv1.ConditionProgressing: {metav1.ConditionTrue, schedv1.ReasonReconciling, "rolling out: web 1/2 replicas ready"},
				schedv1.ConditionDegraded:    {metav1.ConditionFalse, schedv1.ReasonAsExpected, "no problem found"},
			},
			urls: []string{"http://shop.ns.apps.test/"},
		},
		"running": {
			ud: twoServices().Replicas("web", 2).Obj(),
			o:  observed{deployments: map[string]*appsv1.Deployment{"web": deployment("web", 2, 2), "api": deployment("api", 1, 1)}},
			services: []schedv1.ServiceStatus{
				{Name: "web", DesiredReplicas: 2, ReadyReplicas: 2},
				{Name: "api", DesiredReplicas: 1, ReadyReplicas: 1},
			},
			phase: schedv1.UserDeploymentRunning,
			ready: "2/2",
			conditions: map[string]wantCond{
				schedv1.ConditionReady:       {metav1.ConditionTrue, schedv1.ReasonAvailable, "all 2 service(s) are ready"},
				schedv1.ConditionProgressing: {metav1.ConditionFalse, schedv1.ReasonRolledOut, "every service runs its desired replicas"},
				schedv1.ConditionDegraded:    {metav1.ConditionFalse, schedv1.ReasonAsExpected, "no problem found"},
			},
			urls: []string{"http://shop.ns.apps.test/"},
		},
		"an old generation is not rolled out": {
			ud: twoServices().Obj(),
			o: observed{deployments: map[string]*appsv1.Deployment{
				"web": func() *appsv1.Deployment { d := deployment("web", 1, 1); d.Generation = 2; return d }(),
				"api": deployment("api", 1, 1),
			}},
			phase:       schedv1.UserDeploymentProgressing,
			ready:       "1/2",
			ignoreNotes: true,
		},
		"image cannot be pulled": {
			ud: twoServices().Obj(),
			o: observed{
				deployments: map[string]*appsv1.Deployment{"web": deployment("web", 1, 1), "api": deployment("api", 1, 0)},
				pods: map[string][]corev1.Pod{"api": {
					pod("shop-api-2", "api", waiting("ErrImagePull", `failed to pull "api:bad": not found`)),
					pod("shop-api-1", "api", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{}; waiting("CrashLoopBackOff", "")(p) }),
				}},
			},
			services: []schedv1.ServiceStatus{
				{Name: "web", DesiredReplicas: 1, ReadyReplicas: 1},
				{Name: "api", DesiredReplicas: 1, Message: `pod shop-api-2: cannot pull image api:bad: ErrImagePull: failed to pull "api:bad": not found`, LastProgressTime: since(0)},
			},
			phase: schedv1.UserDeploymentDegraded,
			ready: "1/2",
			conditions: map[string]wantCond{
				schedv1.ConditionReady:       {metav1.ConditionFalse, schedv1.ReasonImagePull, `service api: pod shop-api-2: cannot pull image api:bad: ErrImagePull: failed to pull "api:bad": not found`},
				schedv1.ConditionProgressing: {metav1.ConditionFalse, schedv1.ReasonImagePull, `stuck: service api: pod shop-api-2: cannot pull image api:bad: ErrImagePull: failed to pull "api:bad": not found`},
				schedv1.ConditionDegraded:    {metav1.ConditionTrue, schedv1.ReasonImagePull, `service api: pod shop-api-2: cannot pull image api:bad: ErrImagePull: failed to pull "api:bad": not found`},
			},
			urls: []string{"http://shop.ns.apps.test/"},
		},
		"crash loop": {
			ud: app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj(),
			o: observed{
				deployments: map[string]*appsv1.Deployment{"api": deployment("api", 1, 0)},
				pods: map[string][]corev1.Pod{"api": {pod("shop-api-1", "api", func(p *corev1.Pod) {
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{
						Name: "api", RestartCount: 4,
						State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 1m20s"}},
						LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Message: "config missing"}},
					}}
				})}},
			},
			phase: schedv1.UserDeploymentDegraded,
			ready: "0/1",
			services: []schedv1.ServiceStatus{
				{Name: "api", DesiredReplicas: 1, Message: "pod shop-api-1: container api keeps crashing (4 restarts), last exit code 2: config missing", LastProgressTime: since(0)},
			},
			conditions: map[string]wantCond{
				schedv1.ConditionDegraded: {metav1.ConditionTrue, schedv1.ReasonCrashLoop, "service api: pod shop-api-1: container api keeps crashing (4 restarts), last exit code 2: config missing"},
			},
		},
		"unschedulable: waited out, named": {
			ud: app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj(),
			o: observed{
				deployments: map[string]*appsv1.Deployment{"api": deployment("api", 1, 0)},
				pods:        map[string][]corev1.Pod{"api": {pod("shop-api-1", "api", unschedulable)}},
			},
			phase: schedv1.UserDeploymentProgressing,
			ready: "0/1",
			services: []schedv1.ServiceStatus{
				{Name: "api", DesiredReplicas: 1, Message: "pod shop-api-1: no node can run the pod: 0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector.", LastProgressTime: since(0)},
			},
			conditions: map[string]wantCond{
				schedv1.ConditionReady: {metav1.ConditionFalse, schedv1.ReasonUnschedulable, "service api: pod shop-api-1: no node can run the pod: 0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."},
				schedv1.ConditionProgressing: {metav1.ConditionTrue, schedv1.ReasonReconciling, "rolling out: api 0/1 replicas ready; service api: pod shop-api-1: no node can run the pod: " +
					"0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector.; Degraded after 10m0s without progress (spec.progressDeadline)"},
				schedv1.ConditionDegraded: {metav1.ConditionFalse, schedv1.ReasonAsExpected, "no problem found"},
			},
		},
		"unschedulable past the deadline": {
			ud: progressed(app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj(), "api", since(10*time.Minute), 0),
			o: observed{
				deployments: map[string]*appsv1.Deployment{"api": deployment("api", 1, 0)},
				pods:        map[string][]corev1.Pod{"api": {pod("shop-api-1", "api", unschedulable)}},
			},
			phase: schedv1.UserDeploymentDegraded,
			ready: "0/1",
			services: []schedv1.ServiceStatus{
				{Name: "api", DesiredReplicas: 1, LastProgressTime: since(10 * time.Minute),
					Message: "no progress for 10m0s (spec.progressDeadline): pod shop-api-1: no node can run the pod: 0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."},
			},
			conditions: map[string]wantCond{
				schedv1.ConditionDegraded:    {metav1.ConditionTrue, schedv1.ReasonProgressDeadline, "service api: no progress for 10m0s (spec.progressDeadline): pod shop-api-1: no node can run the pod: 0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."},
				schedv1.ConditionProgressing: {metav1.ConditionFalse, schedv1.ReasonProgressDeadline, "stuck: service api: no progress for 10m0s (spec.progressDeadline): pod shop-api-1: no node can run the pod: 0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."},
			},
		},
		"waiting for its CPU scheduler: waited out, named": {
			ud: app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj(),
			o: observed{
				deployments:    map[string]*appsv1.Deployment{"api": deployment("api", 1, 0)},
				pods:           map[string][]corev1.Pod{"api": {pod("shop-api-1", "api", unschedulable)}},
				noCPUScheduler: noLavd,
			},
			phase: schedv1.UserDeploymentProgressing,
			ready: "0/1",
			services: []schedv1.ServiceStatus{
				{Name: "api", DesiredReplicas: 1, Message: "pod shop-api-1: " + noLavd, LastProgressTime: since(0)},
			},
			conditions: map[string]wantCond{
				schedv1.ConditionReady: {metav1.ConditionFalse, schedv1.ReasonCPUSchedulerUnavailable, "service api: pod shop-api-1: " + noLavd},
				schedv1.ConditionProgressing: {metav1.ConditionTrue, schedv1.ReasonReconciling, "rolling out: api 0/1 replicas ready; service api: pod shop-api-1: " + noLavd +
					"; Degraded after 10m0s without progress (spec.progressDeadline)"},
				schedv1.ConditionDegraded: {metav1.ConditionFalse, schedv1.ReasonAsExpected, "no problem found"},
			},
		},
		"waiting for its CPU scheduler says more than a pod starting": {
			ud: app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Replicas("api", 2).Obj(),
			o: observed{
				deployments: map[string]*appsv1.Deployment{"api": deployment("api", 2, 0)},
				pods: map[string][]corev1.Pod{"api": {
					pod("shop-api-1", "api", waiting("ContainerCreating", "")),
					pod("shop-api-2", "api", unschedulable),
				}},
				noCPUScheduler: noLavd,
			},
			phase:       schedv1.UserDeploymentProgressing,
			ready:       "0/1",
			ignoreNotes: true,
			conditions: map[string]wantCond{
				schedv1.ConditionReady: {metav1.ConditionFalse, schedv1.ReasonCPUSchedulerUnavailable, "service api: pod shop-api-2: " + noLavd},
			},
		},
		"waiting for its CPU scheduler past the deadline": {
			ud: progressed(app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj(), "api", since(10*time.Minute), 0),
			o: observed{
				deployments:    map[string]*appsv1.Deployment{"api": deployment("api", 1, 0)},
				pods:           map[string][]corev1.Pod{"api": {pod("shop-api-1", "api", unschedulable)}},
				noCPUScheduler: noLavd,
			},
			phase:       schedv1.UserDeploymentDegraded,
			ready:       "0/1",
			ignoreNotes: true,
			conditions: map[string]wantCond{
				schedv1.ConditionDegraded: {metav1.ConditionTrue, schedv1.ReasonProgressDeadline, "service api: no progress for 10m0s (spec.progressDeadline): pod shop-api-1: " + noLavd},
			},
		},
		"the app's own deadline": {
			ud: progressed(app().Service("api", "api:1", 8080, schedv1.ExposureInternal).
				Spec(func(s *schedv1.UserDeploymentSpec) { s.ProgressDeadline = &metav1.Duration{Duration: 30 * time.Second} }).Obj(),
				"api", since(29*time.Second), 0),
			o: observed{
				deployments: map[string]*appsv1.Deployment{"api": deployment("api", 1, 0)},
				pods:        map[string][]corev1.Pod{"api": {pod("shop-api-1", "api", unschedulable)}},
			},
			phase:       schedv1.UserDeploymentProgressing,
			ready:       "0/1",
			ignoreNotes: true,
			conditions: map[string]wantCond{
				schedv1.ConditionReady: {metav1.ConditionFalse, schedv1.ReasonUnschedulable, "service api: pod shop-api-1: no node can run the pod: 0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."},
				schedv1.ConditionProgressing: {metav1.ConditionTrue, schedv1.ReasonReconciling, "rolling out: api 0/1 replicas ready; service api: pod shop-api-1: no node can run the pod: " +
					"0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector.; Degraded after 30s without progress (spec.progressDeadline)"},
			},
		},
		"containers starting": {
			ud: app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Replicas("api", 2).Obj(),
			o: observed{
				deployments: map[string]*appsv1.Deployment{"api": deployment("api", 2, 1)},
				pods: map[string][]corev1.Pod{"api": {
					pod("shop-api-1", "api", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }),
					pod("shop-api-2", "api", waiting("ContainerCreating", "")),
				}},
			},
			phase: schedv1.UserDeploymentProgressing,
			ready: "0/1",
			services: []schedv1.ServiceStatus{
				{Name: "api", DesiredReplicas: 2, ReadyReplicas: 1, Message: "pod shop-api-2: container api is starting (ContainerCreating)", LastProgressTime: since(0)},
			},
			conditions: map[string]wantCond{
				schedv1.ConditionReady:    {metav1.ConditionFalse, schedv1.ReasonContainersStarting, "service api: pod shop-api-2: container api is starting (ContainerCreating)"},
				schedv1.ConditionDegraded: {metav1.ConditionFalse, schedv1.ReasonAsExpected, "no problem found"},
			},
		},
		"a pod that needs someone wins over one that waits": {
			ud: app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Replicas("api", 2).Obj(),
			o: observed{
				deployments: map[string]*appsv1.Deployment{"api": deployment("api", 2, 0)},
				pods: map[string][]corev1.Pod{"api": {
					pod("shop-api-1", "api", unschedulable),
					pod("shop-api-2", "api", waiting("CreateContainerConfigError", `secret "db" not found`)),
				}},
			},
			phase:       schedv1.UserDeploymentDegraded,
			ready:       "0/1",
			ignoreNotes: true,
			conditions: map[string]wantCond{
				schedv1.ConditionDegraded: {metav1.ConditionTrue, schedv1.ReasonMissingRef, `service api: pod shop-api-2: the container cannot be configured: secret "db" not found`},
			},
		},
		"a rollout without progress, its pods naming no cause": {
			ud: progressed(app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Replicas("api", 3).Obj(), "api", since(11*time.Minute), 2),
			o: observed{
				deployments: map[string]*appsv1.Deployment{"api": deployment("api", 3, 2)},
				pods:        map[string][]corev1.Pod{"api": {pod("shop-api-1", "api", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning })}},
			},
			phase: schedv1.UserDeploymentDegraded,
			ready: "0/1",
			services: []schedv1.ServiceStatus{
				{Name: "api", DesiredReplicas: 3, ReadyReplicas: 2, LastProgressTime: since(11 * time.Minute), Message: "no progress for 10m0s (spec.progressDeadline): 2/3 replicas ready"},
			},
			conditions: map[string]wantCond{
				schedv1.ConditionDegraded: {metav1.ConditionTrue, schedv1.ReasonProgressDeadline, "service api: no progress for 10m0s (spec.progressDeadline): 2/3 replicas ready"},
			},
		},
		"one more replica ready is progress": {
			ud: progressed(app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Replicas("api", 3).Obj(), "api", since(11*time.Minute), 1),
			o: observed{
				deployments: map[string]*appsv1.Deployment{"api": deployment("api", 3, 2)},
				pods:        map[string][]corev1.Pod{"api": {pod("shop-api-3", "api", unschedulable)}},
			},
			phase:       schedv1.UserDeploymentProgressing,
			ready:       "0/1",
			ignoreNotes: true,
			conditions: map[string]wantCond{
				schedv1.ConditionReady:    {metav1.ConditionFalse, schedv1.ReasonUnschedulable, "service api: pod shop-api-3: no node can run the pod: 0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."},
				schedv1.ConditionDegraded: {metav1.ConditionFalse, schedv1.ReasonAsExpected, "no problem found"},
			},
		},
		"a secret the operator cannot provide": {
			ud: twoServices().ExternalSecretRef("db", "prod/db", "api").Obj(),
			o: observed{deployments: map[string]*appsv1.Deployment{
				"web": deployment("web", 1, 1), "api": deployment("api", 0, 0),
			}},
			phase: schedv1.UserDeploymentDegraded,
			ready: "1/2",
			services: []schedv1.ServiceStatus{
				{Name: "web", DesiredReplicas: 1, ReadyReplicas: 1},
				{Name: "api", DesiredReplicas: 0, Message: `not started: secret "db" comes from an external store, but the cluster does not serve external-secrets.io/v1 ExternalSecrets (install External Secrets; the service starts once it is served, without restarting the operator)`},
			},
			conditions: map[string]wantCond{
				schedv1.ConditionDegraded: {metav1.ConditionTrue, schedv1.ReasonExternalSecretsUnavailable, `service api: not started: secret "db" comes from an external store, but the cluster does not serve external-secrets.io/v1 ExternalSecrets (install External Secrets; the service starts once it is served, without restarting the operator)`},
			},
			urls: []string{"http://shop.ns.apps.test/"},
		},
		"pods cannot be created": {
			ud: app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj(),
			o: observed{deployments: map[string]*appsv1.Deployment{"api": withCondition(deployment("api", 1, 0), appsv1.DeploymentCondition{
				Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
				Message: `pods "shop-api-x" is forbidden: exceeded quota: pods`,
			})}},
			phase:       schedv1.UserDeploymentDegraded,
			ready:       "0/1",
			ignoreNotes: true,
			conditions: map[string]wantCond{
				schedv1.ConditionDegraded: {metav1.ConditionTrue, schedv1.ReasonForbidden, `service api: cannot create pods: pods "shop-api-x" is forbidden: exceeded quota: pods`},
			},
		},
		"the Deployment's own deadline": {
			ud: app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj(),
			o: observed{deployments: map[string]*appsv1.Deployment{"api": withCondition(deployment("api", 1, 0), appsv1.DeploymentCondition{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
				Message: `ReplicaSet "shop-api-1" has timed out progressing.`,
			})}},
			phase:       schedv1.UserDeploymentDegraded,
			ready:       "0/1",
			ignoreNotes: true,
			conditions: map[string]wantCond{
				schedv1.ConditionDegraded: {metav1.ConditionTrue, schedv1.ReasonProgressDeadline, `service api: no progress for 10m0s (spec.progressDeadline): 0/1 replicas ready`},
			},
		},
		"the Deployment's deadline from before its template changed": {
			ud: app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj(),
			o: observed{deployments: map[string]*appsv1.Deployment{"api": func() *appsv1.Deployment {
				d := withCondition(deployment("api", 1, 0), appsv1.DeploymentCondition{
					Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
				})
				d.Generation = 2 // just applied: its controller has not seen it
				return d
			}()}},
			phase:       schedv1.UserDeploymentProgressing,
			ready:       "0/1",
			ignoreNotes: true,
			conditions: map[string]wantCond{
				schedv1.ConditionDegraded: {metav1.ConditionFalse, schedv1.ReasonAsExpected, "no problem found"},
			},
		},
		"objects the operator could not write": {
			ud: app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj(),
			o: observed{
				deployments: map[string]*appsv1.Deployment{"api": deployment("api", 1, 1)},
				problems:    []string{"Service shop-api already exists and is not controlled by this UserDeployment; delete or rename it"},
			},
			phase:       schedv1.UserDeploymentDegraded,
			ready:       "1/1",
			ignoreNotes: true,
			conditions: map[string]wantCond{
				schedv1.ConditionDegraded: {metav1.ConditionTrue, schedv1.ReasonCreateFailed, "Service shop-api already exists and is not controlled by this UserDeployment; delete or rename it"},
			},
		},
		"stopping": {
			ud: twoServices().State(schedv1.StateStopped).Obj(),
			o: observed{deployments: map[string]*appsv1.Deployment{
				"web": func() *appsv1.Deployment { d := deployment("web", 0, 1); d.Status.Replicas = 1; return d }(),
				"api": deployment("api", 0, 0),
			}},
			phase: schedv1.UserDeploymentStopped,
			ready: "0/2",
			services: []schedv1.ServiceStatus{
				{Name: "web", DesiredReplicas: 0, ReadyReplicas: 1, Message: "stopping: 1 pod(s) left"},
				{Name: "api", DesiredReplicas: 0},
			},
			conditions: map[string]wantCond{
				schedv1.ConditionReady:       {metav1.ConditionFalse, schedv1.ReasonStopped, "stopped (spec.state: Stopped): every service is scaled to zero"},
				schedv1.ConditionProgressing: {metav1.ConditionTrue, schedv1.ReasonReconciling, "scaling to zero: 1 pod(s) left"},
				schedv1.ConditionDegraded:    {metav1.ConditionFalse, schedv1.ReasonAsExpected, "no problem found"},
			},
			urls: []string{"http://shop.ns.apps.test/"},
		},
		"stopped": {
			ud: twoServices().State(schedv1.StateStopped).Obj(),
			o: observed{deployments: map[string]*appsv1.Deployment{
				"web": deployment("web", 0, 0), "api": deployment("api", 0, 0),
			}},
			phase: schedv1.UserDeploymentStopped,
			ready: "0/2",
			services: []schedv1.ServiceStatus{
				{Name: "web", DesiredReplicas: 0},
				{Name: "api", DesiredReplicas: 0},
			},
			conditions: map[string]wantCond{
				schedv1.ConditionProgressing: {metav1.ConditionFalse, schedv1.ReasonStopped, "every service is scaled to zero"},
			},
			urls: []string{"http://shop.ns.apps.test/"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := buildPlan(tc.ud, testSettings, tc.apis)
			tc.o.now = testNow
			got := computeStatus(tc.ud, p, tc.o)
			if got.Phase != tc.phase || got.Ready != tc.ready {
				t.Errorf("phase %s ready %s, want %s %s", got.Phase, got.Ready, tc.phase, tc.ready)
			}
			if got.ObservedGeneration != tc.ud.Generation {
				t.Errorf("observedGeneration %d, want %d", got.ObservedGeneration, tc.ud.Generation)
			}
			if !tc.ignoreNotes {
				if diff := cmp.Diff(tc.services, got.Services); diff != "" {
					t.Errorf("services (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.urls, got.URLs); diff != "" {
					t.Errorf("urls (-want +got):\n%s", diff)
				}
			}
			for typ, want := range tc.conditions {
				var c *metav1.Condition
				for i := range got.Conditions {
					if got.Conditions[i].Type == typ {
						c = &got.Conditions[i]
					}
				}
				if c == nil {
					t.Errorf("no %s condition in %+v", typ, got.Conditions)
					continue
				}
				if diff := cmp.Diff(want, wantCond{c.Status, c.Reason, c.Message}, cmp.AllowUnexported(wantCond{})); diff != "" {
					t.Errorf("%s condition (-want +got):\n%s", typ, diff)
				}
				if c.ObservedGeneration != tc.ud.Generation {
					t.Errorf("%s condition at generation %d, want %d", typ, c.ObservedGeneration, tc.ud.Generation)
				}
			}
			if len(got.Conditions) != 3 {
				t.Errorf("%d conditions, want Ready, Progressing and Degraded: %+v", len(got.Conditions), got.Conditions)
			}
		})
	}
}

// TestComputeStatusIsStable: the same observation gives the same status,
// transition times included, so a quiet reconcile writes nothing.
func TestComputeStatusIsStable(t *testing.T) {
	ud := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj()
	p := buildPlan(ud, testSettings, apis{})
	o := observed{deployments: map[string]*appsv1.Deployment{"api": deployment("api", 1, 1)}}
	first := computeStatus(ud, p, o)
	for i := range first.Conditions {
		first.Conditions[i].LastTransitionTime = metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	}
	ud.Status = first
	if diff := cmp.Diff(first, computeStatus(ud, p, o)); diff != "" {
		t.Errorf("second status differs (-first +second):\n%s", diff)
	}
	// Running -> Progressing: Ready and Progressing change, Degraded stays
	// False and keeps its transition time.
	o.deployments["api"] = deployment("api", 1, 0)
	next := computeStatus(ud, p, o)
	for _, c := range next.Conditions {
		moved := c.LastTransitionTime.Year() != 2020
		if want := c.Type != schedv1.ConditionDegraded; moved != want {
			t.Errorf("%s condition moved=%v, want %v: %+v", c.Type, moved, want, c)
		}
	}
}

// TestWaitingIsStable: while a service waits within its deadline, time
// passing changes nothing, so a reconcile writes nothing; past it, the app
// is Degraded, and the time to come back is the time left.
func TestWaitingIsStable(t *testing.T) {
	ud := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj()
	p := buildPlan(ud, testSettings, apis{})
	o := observed{
		deployments: map[string]*appsv1.Deployment{"api": deployment("api", 1, 0)},
		pods:        map[string][]corev1.Pod{"api": {pod("shop-api-1", "api", unschedulable)}},
		now:         testNow,
	}
	first := computeStatus(ud, p, o)
	if got := recheckAfter(ud.Spec.Deadline(), first, o.now); got != 10*time.Minute {
		t.Errorf("recheck after %v, want the whole deadline", got)
	}
	ud.Status = first
	o.now = testNow.Add(9 * time.Minute)
	if diff := cmp.Diff(first, computeStatus(ud, p, o)); diff != "" {
		t.Errorf("status changed while waiting (-first +later):\n%s", diff)
	}
	if got := recheckAfter(ud.Spec.Deadline(), first, o.now); got != time.Minute {
		t.Errorf("recheck after %v, want the minute left", got)
	}
	o.now = testNow.Add(10 * time.Minute)
	if st := computeStatus(ud, p, o); st.Phase != schedv1.UserDeploymentDegraded {
		t.Errorf("phase %s at the deadline, want Degraded", st.Phase)
	}
	if got := recheckAfter(ud.Spec.Deadline(), first, o.now); got != 0 {
		t.Errorf("recheck after %v past the deadline, want none", got)
	}
}

func TestLastProgress(t *testing.T) {
	then := since(5 * time.Minute)
	cases := map[string]struct {
		prev    *schedv1.ServiceStatus
		newSpec bool
		done    bool
		ready   int32
		want    *metav1.Time
	}{
		"a new service starts its clock":          {want: since(0)},
		"a service that had rolled out starts it": {prev: &schedv1.ServiceStatus{ReadyReplicas: 2}, ready: 1, want: since(0)},
		"no progress keeps it":                    {prev: &schedv1.ServiceStatus{ReadyReplicas: 1, LastProgressTime: then}, ready: 1, want: then},
		"fewer ready keeps it":                    {prev: &schedv1.ServiceStatus{ReadyReplicas: 2, LastProgressTime: then}, ready: 1, want: then},
		"one more ready restarts it":              {prev: &schedv1.ServiceStatus{ReadyReplicas: 1, LastProgressTime: then}, ready: 2, want: since(0)},
		"a new spec restarts it":                  {prev: &schedv1.ServiceStatus{ReadyReplicas: 1, LastProgressTime: then}, newSpec: true, ready: 1, want: since(0)},
		"rolled out: no clock":                    {prev: &schedv1.ServiceStatus{LastProgressTime: then}, done: true, ready: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := lastProgress(tc.prev, tc.newSpec, tc.done, tc.ready, testNow.Add(300*time.Millisecond))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeadlinePassed(t *testing.T) {
	timedOut := func(generation int64) *appsv1.Deployment {
		d := withCondition(deployment("api", 1, 0), appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"})
		d.Generation = generation
		return d
	}
	cases := map[string]struct {
		since  *metav1.Time
		dep    *appsv1.Deployment
		passed bool
		left   time.Duration
	}{
		"no rollout":                    {},
		"within":                        {since: since(4 * time.Minute), left: 6 * time.Minute},
		"at the deadline":               {since: since(10 * time.Minute), passed: true},
		"past it":                       {since: since(time.Hour), passed: true},
		"the Deployment says so":        {since: since(time.Minute), dep: timedOut(1), passed: true},
		"the Deployment said so before": {since: since(time.Minute), dep: timedOut(2), left: 9 * time.Minute},
		"a StatefulSet has no say":      {since: since(time.Minute), dep: statefulSetView(&appsv1.StatefulSet{}), left: 9 * time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			passed, left := deadlinePassed(&schedv1.ServiceStatus{LastProgressTime: tc.since}, tc.dep, 10*time.Minute, testNow)
			if passed != tc.passed || left != tc.left {
				t.Errorf("passed %v, left %v; want %v, %v", passed, left, tc.passed, tc.left)
			}
		})
	}
}

// TestPriorityMappedCondition: a priority the operator maps is reported with
// its class, one it does not map is reported (never silently dropped), and
// an app without a priority has no such condition.
func TestPriorityMappedCondition(t *testing.T) {
	s := testSettings
	s.PriorityClasses = map[string]string{"High": "kubectl-sched-high"}
	o := observed{deployments: map[string]*appsv1.Deployment{"api": deployment("api", 1, 1)}}
	cases := map[string]struct {
		priority schedv1.Priority
		want     *wantCond
		class    string
	}{
		"no priority": {},
		"mapped":      {priority: schedv1.PriorityHigh, class: "kubectl-sched-high", want: &wantCond{metav1.ConditionTrue, schedv1.ReasonPriorityMapped, "placement.priority High runs as PriorityClass kubectl-sched-high"}},
		"unmapped": {priority: schedv1.PriorityLow, want: &wantCond{metav1.ConditionFalse, schedv1.ReasonPriorityUnmapped,
			"placement.priority Low maps to no PriorityClass in the operator's settings, so the pods run at the cluster's default priority; a cluster admin maps it with 'kubectl sched install --priority-class Low=CLASS'"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ud := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Placement(schedv1.Placement{Priority: tc.priority}).Obj()
			// A condition left from an earlier priority goes when there is none.
			ud.Status.Conditions = []metav1.Condition{{Type: schedv1.ConditionPriorityMapped, Status: metav1.ConditionTrue, Reason: schedv1.ReasonPriorityMapped}}
			p := buildPlan(ud, s, apis{})
			if got := p.deployments["api"].Spec.Template.Spec.PriorityClassName; got != tc.class {
				t.Errorf("priorityClassName %q, want %q", got, tc.class)
			}
			st := computeStatus(ud, p, o)
			var got *wantCond
			for _, c := range st.Conditions {
				if c.Type == schedv1.ConditionPriorityMapped {
					got = &wantCond{c.Status, c.Reason, c.Message}
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(wantCond{})); diff != "" {
				t.Errorf("PriorityMapped (-want +got):\n%s", diff)
			}
			if st.Phase != schedv1.UserDeploymentRunning {
				t.Errorf("phase %s: an unmapped priority must not stop the app", st.Phase)
			}
		})
	}
}

func TestStatusOfAYieldedHost(t *testing.T) {
	ud := MakeUserDeployment("shop", "ns").Service("web", "web:1", 80, schedv1.ExposurePublic).Obj()
	p := buildPlan(ud, testSettings, apis{})
	p.yieldHost("other/shop")
	for _, o := range p.objects {
		if o.GetObjectKind().GroupVersionKind().Kind == "Ingress" {
			t.Errorf("the Ingress is still planned")
		}
	}
	st := computeStatus(ud, p, observed{deployments: map[string]*appsv1.Deployment{"web": deployment("web", 1, 1)}})
	c := meta.FindStatusCondition(st.Conditions, schedv1.ConditionDegraded)
	if st.Phase != schedv1.UserDeploymentDegraded || c == nil || c.Reason != schedv1.ReasonHostConflict {
		t.Fatalf("phase %s Degraded %+v, want Degraded by HostConflict", st.Phase, c)
	}
	if want := "host shop.ns.apps.test is held by other/shop"; !strings.Contains(c.Message, want) {
		t.Errorf("message %q, want it to say %q", c.Message, want)
	}
	if len(st.URLs) != 0 {
		t.Errorf("URLs %v for a host the app does not hold", st.URLs)
	}
}

// TestHolderFirst: the app already routing a host keeps it against a
// claimant created in the same second, whatever their names.
func TestHolderFirst(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 24, 20, 0, 0, 0, time.UTC))
	holder := MakeUserDeployment("shop", "zz-victim").Obj()
	holder.CreationTimestamp = at
	holder.Status.URLs = []string{"http://shop.zz-victim.apps.test/"}
	newcomer := MakeUserDeployment("grab", "aa-attacker").Obj()
	newcomer.CreationTimestamp = at
	if got := holderFirst("shop.zz-victim.apps.test", holder, newcomer); got >= 0 {
		t.Errorf("holderFirst(holder, newcomer) = %d, want the holder first", got)
	}
	if got := holderFirst("shop.zz-victim.apps.test", newcomer, holder); got <= 0 {
		t.Errorf("holderFirst(newcomer, holder) = %d, want the holder first", got)
	}
	// Neither routes it yet: the older wins.
	older := MakeUserDeployment("b", "b").Obj()
	older.CreationTimestamp = metav1.NewTime(at.Add(-time.Second))
	if got := holderFirst("x.apps.test", newcomer, older); got <= 0 {
		t.Errorf("holderFirst(newer, older) = %d, want the older first", got)
	}
}

// One table per condition, from a summary (computeStatus's tests cover
// how a summary is read from the objects).
func TestConditionsFromASummary(t *testing.T) {
	broken := summary{services: 2, ready: 1, causes: []cause{
		{schedv1.ReasonCrashLoop, "service api: crash-looping"}, {schedv1.ReasonHostConflict, "host taken"},
	}}
	cases := map[string]struct {
		sum                         summary
		phase                       schedv1.UserDeploymentPhase
		ready, progressing, degrade metav1.Condition
	}{
		"running": {
			sum: summary{services: 2, ready: 2}, phase: schedv1.UserDeploymentRunning,
			ready:       metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonAvailable, Message: "all 2 service(s) are ready"},
			progressing: metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonRolledOut, Message: "every service runs its desired replicas"},
			degrade:     metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonAsExpected, Message: "no problem found"},
		},
		"rolling out": {
			sum: summary{services: 2, ready: 1, waiting: []string{"api 0/2"}}, phase: schedv1.UserDeploymentProgressing,
			ready:       metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonReconciling, Message: "rolling out: api 0/2 replicas ready"},
			progressing: metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonReconciling, Message: "rolling out: api 0/2 replicas ready"},
			degrade:     metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonAsExpected, Message: "no problem found"},
		},
		"pending": {
			sum: summary{services: 2, missing: 2}, phase: schedv1.UserDeploymentPending,
			ready:       metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonPending, Message: "creating the app's objects: 2 Deployment(s) not created yet"},
			progressing: metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonReconciling, Message: "creating the app's objects: 2 Deployment(s) not created yet"},
			degrade:     metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonAsExpected, Message: "no problem found"},
		},
		"degraded: every cause named, the first one's reason": {
			sum: broken, phase: schedv1.UserDeploymentDegraded,
			ready:       metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonCrashLoop, Message: "service api: crash-looping; host taken"},
			progressing: metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonCrashLoop, Message: "stuck: service api: crash-looping; host taken"},
			degrade:     metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonCrashLoop, Message: "service api: crash-looping; host taken"},
		},
		"waiting on what may clear by itself": {
			sum: summary{services: 2, ready: 1, waiting: []string{"api 0/1"}, deadline: 10 * time.Minute, waitingOn: []cause{
				{schedv1.ReasonUnschedulable, "service api: pod a: no node can run the pod: 0/6"}, {schedv1.ReasonContainersStarting, "service db: pod b: container db is starting (ContainerCreating)"},
			}},
			phase:       schedv1.UserDeploymentProgressing,
			ready:       metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonUnschedulable, Message: "service api: pod a: no node can run the pod: 0/6; service db: pod b: container db is starting (ContainerCreating)"},
			progressing: metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonReconciling, Message: "rolling out: api 0/1 replicas ready; service api: pod a: no node can run the pod: 0/6; service db: pod b: container db is starting (ContainerCreating); Degraded after 10m0s without progress (spec.progressDeadline)"},
			degrade:     metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonAsExpected, Message: "no problem found"},
		},
		"stopping wins over causes, which still show": {
			sum: summary{stopped: true, services: 1, remaining: 2, causes: broken.causes[1:]}, phase: schedv1.UserDeploymentStopped,
			ready:       metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonStopped, Message: "stopped (spec.state: Stopped): every service is scaled to zero"},
			progressing: metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonReconciling, Message: "scaling to zero: 2 pod(s) left"},
			degrade:     metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonHostConflict, Message: "host taken"},
		},
		"stopped": {
			sum: summary{stopped: true, services: 1}, phase: schedv1.UserDeploymentStopped,
			ready:       metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonStopped, Message: "stopped (spec.state: Stopped): every service is scaled to zero"},
			progressing: metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonStopped, Message: "every service is scaled to zero"},
			degrade:     metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonAsExpected, Message: "no problem found"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := phaseOf(tc.sum); got != tc.phase {
				t.Fatalf("phase %s, want %s", got, tc.phase)
			}
			tc.ready.Type, tc.progressing.Type, tc.degrade.Type = schedv1.ConditionReady, schedv1.ConditionProgressing, schedv1.ConditionDegraded
			degraded := degradedCondition(tc.sum)
			for _, c := range []struct{ got, want metav1.Condition }{
				{degraded, tc.degrade},
				{readyCondition(tc.phase, tc.sum, degraded, nil), tc.ready},
				{progressingCondition(tc.phase, tc.sum, degraded), tc.progressing},
			} {
				if diff := cmp.Diff(c.want, c.got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", c.want.Type, diff)
				}
			}
		})
	}
}
