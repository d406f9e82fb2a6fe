// Package refusal sorts the API server's refusals of an object the operator
// creates into those that waiting can cure and those only a new spec can:
// retrying an Invalid object forever would leave its owner Pending forever.
package refusal

import (
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-sched/kubectl-sched/operator/podstatus"
)

// ErrorClass is a class of create errors: how one should be handled.
type ErrorClass int

const (
	// Transient errors (timeouts, conflicts, the server away) are retried
	// with the workqueue's backoff.
	Transient ErrorClass = iota
	// Quota is a ResourceQuota that is full: it may pass once usage drops,
	// so the owner waits, with backoff, and says which quota.
	Quota
	// Final is a refusal no retry can pass: the object is invalid, too
	// large, or forbidden by admission. The owner fails with the message.
	Final
)

// Classify tells the class of err from creating an object.
func Classify(err error) ErrorClass {
	switch {
	case err == nil:
		return Transient
	case apierrors.IsForbidden(err) && (strings.Contains(err.Error(), "exceeded quota") || strings.Contains(err.Error(), "status unknown for quota")):
		// The second: the quota controller has not counted usage yet.
		return Quota
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsRequestEntityTooLargeError(err),
		apierrors.IsBadRequest(err):
		return Final
	}
	return Transient
}

// Message is the server's message, clipped for a status.
func Message(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Message != "" {
		return podstatus.ClipMessage(s.Status().Message)
	}
	return podstatus.ClipMessage(err.Error())
}
