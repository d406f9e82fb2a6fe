package v1alpha1_test

import (
	"strings"
	"testing"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestCPUSchedulerName: the name workloads ask for a SchedExt's scheduler
// by, and the node label's value where it is attached.
func TestCPUSchedulerName(t *testing.T) {
	cases := map[string]struct {
		src  schedv1.SchedulerSource
		want string
	}{
		"a well-known name is itself":            {schedv1.SchedulerSource{Name: "scx_lavd"}, "scx_lavd"},
		"a well-known name from another image":   {schedv1.SchedulerSource{Name: "scx_lavd", Image: "example.com/scx:1"}, "scx_lavd"},
		"an image's scheduler: scx_ and opsName": {schedv1.SchedulerSource{Image: "example.com/mine:1", OpsName: "mine_v2"}, "scx_mine_v2"},
		"an image that attaches any scheduler":   {schedv1.SchedulerSource{Image: "example.com/mine:1"}, ""},
		"an opsName no label value can hold":     {schedv1.SchedulerSource{Image: "example.com/mine:1", OpsName: "My.Sched"}, ""},
		"an opsName too long for a label value":  {schedv1.SchedulerSource{Image: "example.com/mine:1", OpsName: strings.Repeat("a", 60)}, ""},
		"the longest that fits":                  {schedv1.SchedulerSource{Image: "example.com/mine:1", OpsName: strings.Repeat("a", 59)}, "scx_" + strings.Repeat("a", 59)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.src.CPUScheduler(); got != tc.want {
				t.Errorf("CPUScheduler() = %q, want %q", got, tc.want)
			}
		})
	}
}
