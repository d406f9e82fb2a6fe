package optionalapi

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1ac "k8s.io/client-go/applyconfigurations/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-sched/kubectl-sched/api/operatorstatus"
)

// fieldOwner writes the status Lease.
const fieldOwner = "kubectl-sched-operator-status"

// retryAfter is how long a failed write waits before the next try.
const retryAfter = 10 * time.Second

// Reporter writes what Report returns onto the status Lease
// (operatorstatus.LeaseName) in Namespace, when it differs from what the
// Lease holds: once when the replica becomes leader (after Ready, so a
// restart does not report what it has not looked at yet), then on each
// Changed. Its holder is the replica that wrote it, its renew time when.
type Reporter struct {
	// Client writes the Lease (server-side apply); Reader reads it past
	// any cache, once at start.
	Client   client.Client
	Reader   client.Reader
	Identity string
	// Namespace is the operator's own: the confinement policy lets it
	// write Leases and Events there and nothing else.
	Namespace string
	Report    func() []operatorstatus.OptionalAPI
	// Ready is closed when Report is worth writing; nil: at once.
	Ready <-chan struct{}

	wake chan struct{}
}

// NewReporter reports report() as identity on the status Lease in ns once
// ready is closed.
func NewReporter(c client.Client, reader client.Reader, ns, identity string, ready <-chan struct{}, report func() []operatorstatus.OptionalAPI) *Reporter {
	return &Reporter{Client: c, Reader: reader, Namespace: ns, Identity: identity, Ready: ready, Report: report, wake: make(chan struct{}, 1)}
}

// Changed asks for Report to be read again; it never blocks.
func (p *Reporter) Changed() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// NeedLeaderElection is true: one replica reports.
func (p *Reporter) NeedLeaderElection() bool { return true }

// Start writes the report until ctx ends.
func (p *Reporter) Start(ctx context.Context) error {
	lg := log.FromContext(ctx).WithName("operator-status")
	if p.Ready != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-p.Ready:
		}
	}
	written := p.current(ctx)
	var retry <-chan time.Time
	for {
		var err error
		if written, err = p.sync(ctx, written); err != nil {
			lg.Error(err, "Cannot write the operator's status Lease; retrying", "lease", p.Namespace+"/"+operatorstatus.LeaseName)
			retry = time.After(retryAfter)
		} else {
			retry = nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		case <-retry:
		}
	}
}

// sync writes the report when it differs from written, the value the
// Lease holds, and returns the value it holds then.
func (p *Reporter) sync(ctx context.Context, written string) (string, error) {
	value := operatorstatus.Encode(p.Report())
	if value == written {
		return written, nil
	}
	if err := p.write(ctx, value); err != nil {
		return written, err
	}
	return value, nil
}

// current is the report the Lease holds, "" when unknown.
func (p *Reporter) current(ctx context.Context) string {
	var lease coordinationv1.Lease
	err := p.Reader.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: operatorstatus.LeaseName}, &lease)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "Cannot read the operator's status Lease; writing it anew")
		}
		return ""
	}
	return lease.Annotations[operatorstatus.AnnotationOptionalAPIs]
}

func (p *Reporter) write(ctx context.Context, value string) error {
	lease := coordinationv1ac.Lease(operatorstatus.LeaseName, p.Namespace).
		WithAnnotations(map[string]string{operatorstatus.AnnotationOptionalAPIs: value}).
		WithSpec(coordinationv1ac.LeaseSpec().
			WithHolderIdentity(p.Identity).
			WithRenewTime(metav1.NowMicro()))
	if err := p.Client.Apply(ctx, lease, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply Lease %s/%s: %w", p.Namespace, operatorstatus.LeaseName, err)
	}
	return nil
}
