package tenant

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func class(name string, value int32) schedulingv1.PriorityClass {
	return schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
}

var shipped = map[string]string{"Critical": "kubectl-sched-critical", "High": "kubectl-sched-high", "Medium": "kubectl-sched-medium", "Low": "kubectl-sched-low"}

func TestClassesAbove(t *testing.T) {
	classes := []schedulingv1.PriorityClass{
		class("kubectl-sched-critical", 1000000), class("kubectl-sched-high", 10000), class("kubectl-sched-medium", 100),
		class("kubectl-sched-low", -100), class("system-cluster-critical", 2000000000), class("batch", 50),
	}
	cases := map[string]struct {
		max     schedv1.Priority
		classes []schedulingv1.PriorityClass
		mapping map[string]string
		want    []string
	}{
		"Low: everything above -100": {
			max: schedv1.PriorityLow, classes: classes, mapping: shipped,
			want: []string{"batch", "kubectl-sched-critical", "kubectl-sched-high", "kubectl-sched-medium", "system-cluster-critical"},
		},
		"Medium: above 100": {
			max: schedv1.PriorityMedium, classes: classes, mapping: shipped,
			want: []string{"kubectl-sched-critical", "kubectl-sched-high", "system-cluster-critical"},
		},
		"Critical: only the system classes": {
			max: schedv1.PriorityCritical, classes: classes, mapping: shipped,
			want: []string{"system-cluster-critical"},
		},
		"a lower level mapped higher raises the bar": {
			max: schedv1.PriorityMedium, classes: classes, mapping: map[string]string{"Low": "kubectl-sched-high", "Medium": "kubectl-sched-medium"},
			want: []string{"kubectl-sched-critical", "system-cluster-critical"},
		},
		"no class of the allowed levels exists: above the default 0": {
			max: schedv1.PriorityHigh, classes: classes, mapping: map[string]string{"High": "missing"},
			want: []string{"batch", "kubectl-sched-critical", "kubectl-sched-high", "kubectl-sched-medium", "system-cluster-critical"},
		},
		"nothing above": {
			max: schedv1.PriorityCritical, classes: classes[:4], mapping: shipped,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ClassesAbove(tc.max, tc.classes, tc.mapping)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestObjectsCarryTheLimits(t *testing.T) {
	tier := Tier{
		Quota:     corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")},
		Limits:    &ContainerLimits{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		Placement: PlacementLimits{NodePools: []string{"general", "spot"}, Tolerations: []string{schedv1.TaintSpot}, MaxTolerationSeconds: ptr.To[int64](600)},
		TTL:       TTLLimits{Default: &metav1.Duration{Duration: 15 * time.Minute}, Max: &metav1.Duration{Duration: 90 * time.Minute}},
		Apps:      AppLimits{MaxRevisions: ptr.To[int32](3)},
		Outputs:   OutputLimits{MaxFileBytes: ptr.To(resource.MustParse("64Ki"))},
	}
	d := Objects("ns", "free", tier, []schedulingv1.PriorityClass{class("kubectl-sched-medium", 100)}, shipped)
	if len(d.Objects) != 3 || !d.PriorityQuota {
		t.Fatalf("objects %d, priority quota %v; want quota, limits and priority quota", len(d.Objects), d.PriorityQuota)
	}
	q := d.Objects[0].(*corev1.ResourceQuota)
	want := map[string]string{
		schedv1.AnnotationTierMaxPriority: "Low",
		schedv1.AnnotationTierNodePools:   "general,spot",
		schedv1.AnnotationTierTolerations: schedv1.TaintSpot,
		schedv1.AnnotationTierTTLDefault:  "15m",
		schedv1.AnnotationTierTTLMax:      "1h30m",
		// No class is the cluster's default: pods that name none need none.
		schedv1.AnnotationTierDefaultPriorityClass: "",
		schedv1.AnnotationTierMaxTolerationSeconds: "600",
		schedv1.AnnotationTierMaxRevisions:         "3",
		schedv1.AnnotationTierFileOutputBytes:      "65536",
	}
	if diff := cmp.Diff(want, q.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	// Defaulted as the API server would, so the stored object compares equal.
	lr := d.Objects[1].(*corev1.LimitRange)
	if got := lr.Spec.Limits[0].DefaultRequest[corev1.ResourceCPU]; got.String() != "1" {
		t.Errorf("defaultRequest cpu %s, want 1 (from max through default)", got.String())
	}
	pq := d.Objects[2].(*corev1.ResourceQuota)
	if pq.Name != schedv1.TierPriorityQuotaName || pq.Spec.ScopeSelector.MatchExpressions[0].Values[0] != "kubectl-sched-medium" {
		t.Errorf("priority quota %+v", pq)
	}

	if d := Objects("ns", "free", tier, nil, shipped); d.PriorityQuota || len(d.Objects) != 2 {
		t.Errorf("without classes above: %d objects, priority quota %v", len(d.Objects), d.PriorityQuota)
	}
}

// TestDefaultPriorityClass: when the cluster's default PriorityClass
// (globalDefault) is above a tier, the API server would give it to every
// pod that names no class and the tier's priority quota would refuse them
// all; the tier's quota names the class its pods get instead, the highest
// of the tier's own priorities.
func TestDefaultPriorityClass(t *testing.T) {
	def := func(name string, value int32) schedulingv1.PriorityClass {
		c := class(name, value)
		c.GlobalDefault = true
		return c
	}
	base := []schedulingv1.PriorityClass{class("kubectl-sched-critical", 1000000), class("kubectl-sched-high", 10000), class("kubectl-sched-medium", 100), class("kubectl-sched-low", -100)}
	cases := map[string]struct {
		max     schedv1.Priority
		classes []schedulingv1.PriorityClass
		mapping map[string]string
		want    string
	}{
		"no default class":                 {max: schedv1.PriorityLow, classes: base, mapping: shipped, want: ""},
		"a default above free":             {max: schedv1.PriorityLow, classes: append(base, def("cluster-default", 1000)), mapping: shipped, want: "kubectl-sched-low"},
		"a default of 0 is above free too": {max: schedv1.PriorityLow, classes: append(base, def("cluster-default", 0)), mapping: shipped, want: "kubectl-sched-low"},
		"a default below the tier":         {max: schedv1.PriorityLow, classes: append(base, def("cluster-default", -1000)), mapping: shipped, want: ""},
		"team gets its Medium":             {max: schedv1.PriorityMedium, classes: append(base, def("cluster-default", 1000)), mapping: shipped, want: "kubectl-sched-medium"},
		"a default the tier may use":       {max: schedv1.PriorityHigh, classes: append(base, def("cluster-default", 1000)), mapping: shipped, want: ""},
		"no class of the tier's exists":    {max: schedv1.PriorityLow, classes: append(base[:3], def("cluster-default", 1000)), mapping: shipped, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tier := Tier{Quota: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}, Placement: PlacementLimits{MaxPriority: tc.max}}
			q := Objects("ns", "free", tier, tc.classes, tc.mapping).Objects[0].(*corev1.ResourceQuota)
			if got := q.Annotations[schedv1.AnnotationTierDefaultPriorityClass]; got != tc.want {
				t.Errorf("default class %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUpToDate(t *testing.T) {
	desired := Objects("ns", "team", Tier{Quota: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("100")}}, nil, shipped).Objects[0].(*corev1.ResourceQuota)
	same := desired.DeepCopy()
	same.Labels["other"] = "kept"
	same.Spec.Hard[corev1.ResourcePods] = resource.MustParse("1e2")
	same.Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("7")}
	if !UpToDate(desired, same) {
		t.Errorf("an equal quota with another label, another spelling and a status is not up to date")
	}
	for name, edit := range map[string]func(*corev1.ResourceQuota){
		"hard":       func(q *corev1.ResourceQuota) { q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("101") },
		"extra hard": func(q *corev1.ResourceQuota) { q.Spec.Hard[corev1.ResourceCPU] = resource.MustParse("1") },
		"annotation": func(q *corev1.ResourceQuota) { q.Annotations[schedv1.AnnotationTierMaxPriority] = "Critical" },
		"label":      func(q *corev1.ResourceQuota) { delete(q.Labels, schedv1.LabelManagedBy) },
	} {
		q := desired.DeepCopy()
		edit(q)
		if UpToDate(desired, q) {
			t.Errorf("%s edited: still up to date", name)
		}
	}
}

func TestParseTiersPlacement(t *testing.T) {
	cm := &corev1.ConfigMap{Data: map[string]string{
		"ok":       "quota: {pods: '1'}\nplacement: {maxPriority: High, nodePools: ['*'], tolerations: [nvidia.com/gpu]}",
		"priority": "quota: {pods: '1'}\nplacement: {maxPriority: Urgent}",
		"pool":     "quota: {pods: '1'}\nplacement: {nodePools: ['Not A Pool']}",
		"taint":    "quota: {pods: '1'}\nplacement: {tolerations: ['a,b']}",
		"unknown":  "quota: {pods: '1'}\nplacement: {maxPriorty: High}",
		"seconds":  "quota: {pods: '1'}\nplacement: {maxTolerationSeconds: -1}",
		"history":  "quota: {pods: '1'}\napps: {maxRevisions: 0}",
		"outputs":  "quota: {pods: '1'}\noutputs: {maxFileBytes: 2Mi}",
	}}
	tiers, bad := ParseTiers(cm)
	if _, ok := tiers["ok"]; !ok || len(tiers) != 1 {
		t.Errorf("tiers %v, want only ok", Names(tiers))
	}
	for name, want := range map[string]string{"priority": "maxPriority", "pool": "nodePools", "taint": "tolerations", "unknown": "maxPriorty",
		"seconds": "placement.maxTolerationSeconds -1 is not between 0 and 86400", "history": "apps.maxRevisions 0 is not between 1 and 100",
		"outputs": "outputs.maxFileBytes 2Mi is not between 0 (excluded) and 1Mi"} {
		if err := bad[name]; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want it to name %s", name, err, want)
		}
	}
}

func TestParseTiersTTL(t *testing.T) {
	cm := &corev1.ConfigMap{Data: map[string]string{
		"ok":         "quota: {pods: '1'}\nttl: {default: 15m, max: 24h}",
		"only max":   "quota: {pods: '1'}\nttl: {max: 24h}",
		"above max":  "quota: {pods: '1'}\nttl: {default: 48h, max: 24h}",
		"too long":   "quota: {pods: '1'}\nttl: {max: 9000h}",
		"zero":       "quota: {pods: '1'}\nttl: {default: 0s}",
		"not a time": "quota: {pods: '1'}\nttl: {default: tomorrow}",
		"misspelled": "quota: {pods: '1'}\nttl: {defualt: 1h}", //nolint:misspell // the typo is the case
	}}
	tiers, bad := ParseTiers(cm)
	if diff := cmp.Diff([]string{"ok", "only max"}, Names(tiers)); diff != "" {
		t.Errorf("tiers (-want +got):\n%s", diff)
	}
	for name, want := range map[string]string{
		"above max": "ttl.default 48h is above ttl.max 24h", "too long": "ttl.max 9000h0m0s is not between",
		"zero": "ttl.default 0s is not between", "not a time": "tomorrow", "misspelled": "defualt", //nolint:misspell // the typo is the case
	} {
		if err := bad[name]; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want it to say %q", name, err, want)
		}
	}
	// The shipped tiers all have TTLs, the default within the maximum.
	if got := tiers["ok"].TTL; got.Default.Duration != 15*time.Minute || got.Max.Duration != 24*time.Hour {
		t.Errorf("ok: ttl %+v", got)
	}
}
