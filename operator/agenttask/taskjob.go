package agenttask

import "github.com/kubectl-sched/kubectl-sched/operator/taskjob"

// The Job's names this package and its tests read, defined with the Job in
// operator/taskjob.
const (
	ContainerName    = taskjob.ContainerName
	OutputsFinalizer = taskjob.OutputsFinalizer
	// OutputsContainerName is the sidecar that hands file outputs over.
	OutputsContainerName = taskjob.OutputsContainerName
	// CloneContainerName is the init container that clones spec.repos.
	CloneContainerName = taskjob.CloneContainerName
)
