package schedext

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

var (
	day0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	day1 = day0.Add(time.Hour)
	day2 = day0.Add(2 * time.Hour)
)

const pool = schedv1.NodeLabelPool

func node(name, poolName, zone string, taints ...corev1.Taint) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{pool: poolName, schedv1.NodeLabelZone: zone}},
		Spec:       corev1.NodeSpec{Taints: taints},
	}
}

var (
	gpuTaint  = corev1.Taint{Key: schedv1.TaintGPU, Value: "present", Effect: corev1.TaintEffectNoSchedule}
	spotTaint = corev1.Taint{Key: schedv1.TaintSpot, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	gpuTol    = corev1.Toleration{Key: schedv1.TaintGPU, Operator: corev1.TolerationOpExists}
	allTol    = corev1.Toleration{Operator: corev1.TolerationOpExists}
)

// simNodes mirror the simulated cluster's six nodes.
func simNodes() []corev1.Node {
	return []corev1.Node{
		node("general-a", "general", "zone-a"),
		node("general-b", "general", "zone-b"),
		node("general-c", "general", "zone-c"),
		node("highmem-a", "highmem", "zone-a"),
		node("spot-b", "spot", "zone-b", spotTaint),
		node("gpu-c", "gpu", "zone-c", gpuTaint),
	}
}

func TestArbitrate(t *testing.T) {
	cases := map[string]struct {
		scxs  []*schedv1.SchedExt
		nodes []corev1.Node
		want  map[string]Assignment
	}{
		"disjoint selections share nothing": {
			scxs: []*schedv1.SchedExt{
				MakeSchedExt("a").Created(day0).NodeSelector(pool, "general").Obj(),
				MakeSchedExt("b").Created(day1).NodeSelector(pool, "highmem").Obj(),
			},
			want: map[string]Assignment{
				"a": {Nodes: []string{"general-a", "general-b", "general-c"}},
				"b": {Nodes: []string{"highmem-a"}},
			},
		},
		"the older keeps overlapping nodes": {
			scxs: []*schedv1.SchedExt{
				// Listed younger first: order of the input does not matter.
				MakeSchedExt("young").Created(day1).Obj(),
				MakeSchedExt("old").Created(day0).NodeSelector(pool, "general").Obj(),
			},
			want: map[string]Assignment{
				"old": {Nodes: []string{"general-a", "general-b", "general-c"}},
				"young": {Nodes: []string{"highmem-a"}, Conflicts: []Conflict{
					{Node: "general-a", Winner: "old"}, {Node: "general-b", Winner: "old"}, {Node: "general-c", Winner: "old"},
				}},
			},
		},
		"same creation second: the name decides": {
			scxs: []*schedv1.SchedExt{
				MakeSchedExt("b").Created(day0).NodeSelector(pool, "highmem").Obj(),
				MakeSchedExt("a").Created(day0).NodeSelector(pool, "highmem").Obj(),
			},
			want: map[string]Assignment{
				"a": {Nodes: []string{"highmem-a"}},
				"b": {Conflicts: []Conflict{{Node: "highmem-a", Winner: "a"}}},
			},
		},
		"age beats the name": {
			scxs: []*schedv1.SchedExt{
				MakeSchedExt("a").Created(day1).NodeSelector(pool, "highmem").Obj(),
				MakeSchedExt("z").Created(day0).NodeSelector(pool, "highmem").Obj(),
			},
			want: map[string]Assignment{
				"z": {Nodes: []string{"highmem-a"}},
				"a": {Conflicts: []Conflict{{Node: "highmem-a", Winner: "z"}}},
			},
		},
		"three-way: each keeps what no older one selects": {
			scxs: []*schedv1.SchedExt{
				MakeSchedExt("first").Created(day0).NodeSelector(pool, "general").Obj(),
				MakeSchedExt("second").Created(day1).NodeSelector(schedv1.NodeLabelZone, "zone-a").Obj(),
				MakeSchedExt("third").Created(day2).Obj(),
			},
			want: map[string]Assignment{
				"first":  {Nodes: []string{"general-a", "general-b", "general-c"}},
				"second": {Nodes: []string{"highmem-a"}, Conflicts: []Conflict{{Node: "general-a", Winner: "first"}}},
				"third": {Conflicts: []Conflict{
					{Node: "general-a", Winner: "first"}, {Node: "general-b", Winner: "first"},
					{Node: "general-c", Winner: "first"}, {Node: "highmem-a", Winner: "second"},
				}},
			},
		},
		"a SchedExt being deleted hands its nodes over at once": {
			scxs: []*schedv1.SchedExt{
				deleting(MakeSchedExt("old").Created(day0).NodeSelector(pool, "general").Obj()),
				MakeSchedExt("young").Created(day1).NodeSelector(pool, "general").Obj(),
			},
			want: map[string]Assignment{
				"young": {Nodes: []string{"general-a", "general-b", "general-c"}},
			},
		},
		"an untolerated taint is not claimed, so a younger SchedExt that tolerates it gets the node": {
			scxs: []*schedv1.SchedExt{
				MakeSchedExt("everywhere").Created(day0).Obj(),
				MakeSchedExt("gpu").Created(day1).NodeSelector(pool, "gpu").Toleration(gpuTol).Obj(),
			},
			want: map[string]Assignment{
				"everywhere": {Nodes: []string{"general-a", "general-b", "general-c", "highmem-a"}},
				"gpu":        {Nodes: []string{"gpu-c"}},
			},
		},
		"a tolerated taint is claimed like any node": {
			scxs: []*schedv1.SchedExt{
				MakeSchedExt("everywhere").Created(day0).Toleration(allTol).Obj(),
				MakeSchedExt("gpu").Created(day1).NodeSelector(pool, "gpu").Toleration(gpuTol).Obj(),
			},
			want: map[string]Assignment{
				"everywhere": {Nodes: []string{"general-a", "general-b", "general-c", "gpu-c", "highmem-a", "spot-b"}},
				"gpu":        {Conflicts: []Conflict{{Node: "gpu-c", Winner: "everywhere"}}},
			},
		},
		"node trouble taints and cordons do not move a node": {
			scxs: []*schedv1.SchedExt{
				MakeSchedExt("old").Created(day0).NodeSelector(pool, "general").Obj(),
				MakeSchedExt("young").Created(day1).NodeSelector(pool, "general").Toleration(allTol).Obj(),
			},
			nodes: []corev1.Node{
				node("general-a", "general", "zone-a",
					corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
					corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
					corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}),
			},
			want: map[string]Assignment{
				"old":   {Nodes: []string{"general-a"}},
				"young": {Conflicts: []Conflict{{Node: "general-a", Winner: "old"}}},
			},
		},
		"PreferNoSchedule taints do not keep a scheduler off": {
			scxs: []*schedv1.SchedExt{MakeSchedExt("a").Created(day0).Obj()},
			nodes: []corev1.Node{
				node("n", "general", "zone-a", corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}),
			},
			want: map[string]Assignment{"a": {Nodes: []string{"n"}}},
		},
		"a node being deleted is nobody's": {
			scxs: []*schedv1.SchedExt{MakeSchedExt("a").Created(day0).Obj()},
			nodes: func() []corev1.Node {
				n := node("going", "general", "zone-a")
				n.DeletionTimestamp = &metav1.Time{Time: day1}
				return []corev1.Node{n, node("staying", "general", "zone-b")}
			}(),
			want: map[string]Assignment{"a": {Nodes: []string{"staying"}}},
		},
		"no SchedExts": {
			want: map[string]Assignment{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes := tc.nodes
			if nodes == nil {
				nodes = simNodes()
			}
			scxs := make([]schedv1.SchedExt, 0, len(tc.scxs))
			for _, s := range tc.scxs {
				scxs = append(scxs, *s)
			}
			got := Arbitrate(scxs, nodes)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("assignments (-want +got):\n%s", diff)
			}
		})
	}
}

func deleting(s *schedv1.SchedExt) *schedv1.SchedExt {
	s.DeletionTimestamp = &metav1.Time{Time: day2}
	return s
}

func TestTrimNodeKeepsWhatArbitrationReads(t *testing.T) {
	n := node("n", "general", "zone-a", gpuTaint)
	n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"big"}}}
	out, err := TrimNode(&n)
	if err != nil {
		t.Fatal(err)
	}
	want := node("n", "general", "zone-a", gpuTaint)
	if diff := cmp.Diff(&want, out); diff != "" {
		t.Errorf("trimmed node (-want +got):\n%s", diff)
	}
}

func TestOwnerAgreesWithArbitrate(t *testing.T) {
	scxs := []schedv1.SchedExt{
		*MakeSchedExt("young").Created(day2).Obj(),
		*MakeSchedExt("zone-a").Created(day1).NodeSelector(schedv1.NodeLabelZone, "zone-a").Obj(),
		*deleting(MakeSchedExt("gone").Created(day0).Obj()),
		*MakeSchedExt("general").Created(day0).NodeSelector(pool, "general").Obj(),
		*MakeSchedExt("gpu").Created(day1).NodeSelector(pool, "gpu").Toleration(gpuTol).Obj(),
	}
	nodes := simNodes()
	want := map[string]string{}
	for name, a := range Arbitrate(scxs, nodes) {
		for _, n := range a.Nodes {
			want[n] = name
		}
	}
	for i := range nodes {
		if got := Owner(scxs, &nodes[i]); got != want[nodes[i].Name] {
			t.Errorf("owner of %s: %q, arbitration gives it to %q", nodes[i].Name, got, want[nodes[i].Name])
		}
	}
	if want["spot-b"] != "" || want["highmem-a"] != "zone-a" || want["general-a"] != "general" {
		t.Errorf("arbitration %v: the cases this test means to cover are gone", want)
	}
}
