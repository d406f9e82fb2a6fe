// Package teardown tests, on the simulated cluster with every controller of
// the operator running, that deleting a tenant's namespace is never held up
// by the operator: pods holding the outputs finalizer are released, nothing
// is created into the terminating namespace, and the namespace goes. It
// holds only tests.
package teardown
