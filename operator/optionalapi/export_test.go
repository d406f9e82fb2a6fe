package optionalapi

import "context"

// Current is what the status Lease holds, "" when unknown.
func (p *Reporter) Current(ctx context.Context) string { return p.current(ctx) }

// Sync is one round of Start: the report written unless written equals it.
func (p *Reporter) Sync(ctx context.Context, written string) (string, error) {
	return p.sync(ctx, written)
}
