package userdeployment

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// What the controller writes, for the benchmarks that send its requests
// or the same objects directly without running it (BenchmarkUserDeployments,
// BenchmarkRequestCost) and the tests of what it caches.

// FieldOwner is the field manager of everything the controller writes.
const FieldOwner = fieldOwner

// PlanObjects is what the controller makes for ud under s, in creation
// order, without asking the cluster which optional APIs it serves.
func PlanObjects(ud *schedv1.UserDeployment, s Settings) []client.Object {
	return buildPlan(ud, s, apis{}).objects
}

// ApplyForm is what the controller creates or applies for desired.
func ApplyForm(desired client.Object) (*unstructured.Unstructured, error) { return applyForm(desired) }
