package tenant

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply is the reconciler's apply, for tests that give it a client whose
// reads lag behind.
func (r *Reconciler) Apply(ctx context.Context, obj client.Object) error { return r.apply(ctx, obj) }

// Remembered is how many writes the reconciler holds until its cache shows
// them.
func (r *Reconciler) Remembered() int { return r.writes.Len() }
