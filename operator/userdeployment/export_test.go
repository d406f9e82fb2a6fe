package userdeployment

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InSync reports whether applying form would leave actual as it is.
func InSync(form *unstructured.Unstructured, actual client.Object) (bool, error) {
	return inSync(form, actual)
}
