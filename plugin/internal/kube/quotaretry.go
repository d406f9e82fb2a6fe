package kube

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// quotaBackoff spaces the retries of a write refused by a quota conflict:
// 5 tries over about a second and a half.
var quotaBackoff = wait.Backoff{Steps: 5, Duration: 50 * time.Millisecond, Factor: 2, Jitter: 0.2}

// quotaConflict is true for the refusal the API server's ResourceQuota
// admission gives when another writer (kube-controller-manager updates a
// quota's status many times a second under load) changed the quota between
// its read and its write. Nothing was written, so the same write may be
// sent again.
func quotaConflict(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Group == "" && d.Kind == "resourcequotas"
}

// retryQuotaConflict runs write again while it fails on a quota conflict.
func retryQuotaConflict(write func() error) error {
	return retry.OnError(quotaBackoff, quotaConflict, write)
}
