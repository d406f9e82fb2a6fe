// Package requests measures what tenant activity costs the operator beyond
// its own objects: a metrics scrape, with many tasks cached; FailedCreate
// events about Jobs, most of them other tenants'; HorizontalPodAutoscaler
// status updates, every sync of every autoscaler in the cluster; quota
// status updates, which the quota controller writes with every pod; the
// Jobs of large tasks; a tenant padding the objects the operator made in
// their namespace; and ConfigMaps and pods that are not the operator's.
// Each benchmark runs the operator (or its cache) against a real API server
// and prints the API requests, reconciles and allocations per scrape,
// event or update, and the heap each cached object costs; it asserts
// nothing about them. See docs/contributors/benchmarks.md.
package requests
