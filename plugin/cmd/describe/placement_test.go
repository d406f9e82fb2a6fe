package describe

import (
	"testing"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestPlacementLine(t *testing.T) {
	for want, p := range map[string]schedv1.Placement{
		"<none>": {},
		"nodePools=general,real cpuScheduler=scx_lavd": {NodePools: []string{"general", "real"}, CPUScheduler: "scx_lavd"},
		"spot=Allowed multiZone=true":                  {Spot: schedv1.SpotAllowed, MultiZone: true},
	} {
		if got := placement(p); got != want {
			t.Errorf("placement(%+v) = %q, want %q", p, got, want)
		}
	}
}
