// Package tierbounds tests, on the simulated cluster with every controller
// of the operator running and the shipped tiers, what a tenant's member can
// make the cluster hold and do, as that member in a namespace made by
// `kubectl sched tenant create`: how many bytes a free-tier namespace can
// make the cluster store, through every kind a member creates or the
// operator creates for them; containers' ephemeral storage and the
// disruptions a task is replaced after; and tiers under a cluster whose
// default PriorityClass is above them. It holds only tests.
package tierbounds
