// Package freshinstall tests a tenant made in the seconds after the CRDs
// are installed, on a simulated cluster whose kube-controller-manager keeps
// its default --resource-quota-sync-period (5m): the tenant package's tests
// shorten it, which hides what a real cluster does. It has only tests.
package freshinstall
