// Package members tests, on the simulated cluster, that a tenant's members
// can use every command of the plugin in their namespace and a member of
// another tenant none of them, and derives from the requests the commands
// make that the ClusterRole kubectl-sched-tenant grants what they use and
// nothing more. It holds only tests; the bytes of real logs, which kwok
// nodes do not have, are tested on the real node (hack/test/realnode).
package members
