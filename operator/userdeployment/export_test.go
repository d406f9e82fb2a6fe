package userdeployment

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// PlanObjects lets the benchmark create exactly what the operator would,
// directly, to compare with.
func PlanObjects(ud *schedv1.UserDeployment, s Settings) []client.Object {
	return buildPlan(ud, s, apis{}).objects
}

// FieldOwner is the field manager of everything the controller writes.
const FieldOwner = fieldOwner

// ApplyForm is what the controller applies for desired.
func ApplyForm(desired client.Object) (*unstructured.Unstructured, error) { return applyForm(desired) }

// InSync reports whether applying form would leave actual as it is.
func InSync(form *unstructured.Unstructured, actual client.Object) (bool, error) {
	return inSync(form, actual)
}
