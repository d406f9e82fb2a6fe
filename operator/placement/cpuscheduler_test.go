package placement

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestUnavailableMessage(t *testing.T) {
	cases := map[string]struct {
		scheduler     string
		providers     []Provider
		runsElsewhere bool
		want          string
	}{
		"no SchedExt loads a well-known scheduler": {
			scheduler: "scx_lavd",
			want:      "no node runs the CPU scheduler scx_lavd (placement.cpuScheduler) and no SchedExt loads it: ask a cluster admin to create one (kubectl sched schedext set NAME --sched scx_lavd --nodes LABEL=VALUE)",
		},
		"no SchedExt loads an image's scheduler": {
			scheduler: "scx_mine",
			want:      "no node runs the CPU scheduler scx_mine (placement.cpuScheduler) and no SchedExt loads it: ask a cluster admin to create one (kubectl sched schedext set NAME --sched IMAGE --ops-name mine --nodes LABEL=VALUE)",
		},
		"a node with it but no SchedExt (a label on its way out) says there is none": {
			scheduler: "scx_lavd", runsElsewhere: true,
			want: "no node runs the CPU scheduler scx_lavd (placement.cpuScheduler) and no SchedExt loads it: ask a cluster admin to create one (kubectl sched schedext set NAME --sched scx_lavd --nodes LABEL=VALUE)",
		},
		"one SchedExt, attached nowhere": {
			scheduler: "scx_lavd", providers: []Provider{{Name: "lavd", State: schedv1.ReasonUnsupportedKernel}},
			want: "no node runs the CPU scheduler scx_lavd (placement.cpuScheduler) yet: SchedExt lavd (UnsupportedKernel) loads it, and the pod runs once a node's kernel reports it attached",
		},
		"a SchedExt without status yet": {
			scheduler: "scx_lavd", providers: []Provider{{Name: "lavd"}},
			want: "no node runs the CPU scheduler scx_lavd (placement.cpuScheduler) yet: SchedExt lavd (no status yet) loads it, and the pod runs once a node's kernel reports it attached",
		},
		"attached, but only where the placement may not go": {
			scheduler: "scx_lavd", runsElsewhere: true,
			providers: []Provider{{Name: "a", State: schedv1.ReasonAttached}, {Name: "b", State: schedv1.ReasonNotAttached}},
			want:      "the CPU scheduler scx_lavd (placement.cpuScheduler) runs on no node the rest of the placement allows (node pools, spot, GPU); SchedExts a (Attached), b (NotAttached) load it on other nodes",
		},
		"at most five named": {
			scheduler: "scx_lavd",
			providers: []Provider{{Name: "a", State: "Attached"}, {Name: "b", State: "Attached"}, {Name: "c", State: "Attached"}, {Name: "d", State: "Attached"},
				{Name: "e", State: "Attached"}, {Name: "f", State: "Attached"}, {Name: "g", State: "Attached"}},
			want: "no node runs the CPU scheduler scx_lavd (placement.cpuScheduler) yet: SchedExts a (Attached), b (Attached), c (Attached), d (Attached), e (Attached) and 2 more load it, and the pod runs once a node's kernel reports it attached",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := UnavailableMessage(tc.scheduler, tc.providers, tc.runsElsewhere); got != tc.want {
				t.Errorf("message\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestProviders(t *testing.T) {
	withReady := func(w *SchedExtWrapper, reason string) *schedv1.SchedExt {
		s := w.Obj()
		s.Status.Conditions = []metav1.Condition{{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason}}
		return s
	}
	deleting := MakeSchedExt("going").Scheduler("scx_lavd").Obj()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	scxs := []schedv1.SchedExt{
		*withReady(MakeSchedExt("z-lavd").Scheduler("scx_lavd"), schedv1.ReasonNotAttached),
		*MakeSchedExt("a-lavd").Scheduler("scx_lavd").Obj(),
		*withReady(MakeSchedExt("rusty").Scheduler("scx_rusty"), schedv1.ReasonAttached),
		// An image's scheduler is scx_ and its ops name.
		*MakeSchedExt("mine").Image("registry.example/lavd:1", "lavd").Obj(),
		// An image without one attaches any scheduler: it provides none.
		*MakeSchedExt("anything").Image("registry.example/x:1", "").Obj(),
		*deleting,
	}
	want := []Provider{{Name: "a-lavd"}, {Name: "mine"}, {Name: "z-lavd", State: schedv1.ReasonNotAttached}}
	if diff := cmp.Diff(want, Providers(scxs, "scx_lavd")); diff != "" {
		t.Errorf("providers of scx_lavd (-want +got):\n%s", diff)
	}
	if got := Providers(scxs, "scx_bpfland"); len(got) != 0 {
		t.Errorf("providers of scx_bpfland: %v, want none", got)
	}
}

func TestMatchesRequired(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{
		schedv1.NodeLabelPool: "general", schedv1.NodeLabelCPUScheduler: "scx_lavd", "cores": "8"}}}
	terms := func(ts ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: ts}}}
	}
	exprs := func(rs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: rs}
	}
	cases := map[string]struct {
		affinity *corev1.Affinity
		want     bool
	}{
		"no affinity":                         {nil, true},
		"placement's own term":                {terms(exprs(req(schedv1.NodeLabelPool, corev1.NodeSelectorOpIn, "general"), notSpot, lavd)), true},
		"another pool":                        {terms(exprs(req(schedv1.NodeLabelPool, corev1.NodeSelectorOpIn, "real"), lavd)), false},
		"another scheduler":                   {terms(exprs(req(schedv1.NodeLabelCPUScheduler, corev1.NodeSelectorOpIn, "scx_rusty"))), false},
		"second term matches":                 {terms(exprs(req(schedv1.NodeLabelPool, corev1.NodeSelectorOpIn, "real")), exprs(lavd)), true},
		"an empty term matches none":          {terms(corev1.NodeSelectorTerm{}), false},
		"exists and does not exist":           {terms(exprs(req("cores", corev1.NodeSelectorOpExists), req("gpu", corev1.NodeSelectorOpDoesNotExist))), true},
		"greater than":                        {terms(exprs(req("cores", corev1.NodeSelectorOpGt, "4"))), true},
		"less than":                           {terms(exprs(req("cores", corev1.NodeSelectorOpLt, "4"))), false},
		"by name":                             {terms(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req(metav1.ObjectNameField, corev1.NodeSelectorOpIn, "n1")}}), true},
		"excluded by name":                    {terms(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req(metav1.ObjectNameField, corev1.NodeSelectorOpNotIn, "n1")}}), false},
		"an unknown operator matches nothing": {terms(exprs(req("cores", "Near", "8"))), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := MatchesRequired(tc.affinity, node); got != tc.want {
				t.Errorf("MatchesRequired = %v, want %v", got, tc.want)
			}
		})
	}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

var (
	notSpot = req(schedv1.NodeLabelSpot, corev1.NodeSelectorOpNotIn, "true")
	lavd    = req(schedv1.NodeLabelCPUScheduler, corev1.NodeSelectorOpIn, "scx_lavd")
)
