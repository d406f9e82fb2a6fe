package userdeployment

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// PlanObjects lets the benchmark create exactly what the operator would,
// directly, to compare with.
func PlanObjects(ud *schedv1.UserDeployment, s Settings) []client.Object {
	return buildPlan(ud, s, apis{}).objects
}
