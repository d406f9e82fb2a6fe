package substitution

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// CacheKeyTooLongError is a step's cache key that resolves past
// v1alpha1.MaxCacheKeyLength. The operator reports it with reason TooLarge.
type CacheKeyTooLongError struct {
	// Step is the step's name; StepIndex its index.
	Step      string
	StepIndex int
	// Size is what the key resolves to, in bytes.
	Size int
	// ParamsOnly: the size counts params alone, outputs as empty (the
	// plugin's check before the workflow runs).
	ParamsOnly bool
	// Finally: a finally step, StepIndex counting spec.finally.
	Finally bool
}

func (e *CacheKeyTooLongError) Error() string {
	label, when := sizedStep(e.StepIndex, e.Step, e.Finally, e.ParamsOnly)
	return fmt.Sprintf("%s: cache.key resolves to %d bytes %s, more than the %d a cache key may hold; put less in the key, such as a digest output instead of the content it names",
		label, e.Size, when, v1alpha1.MaxCacheKeyLength)
}

// ResolveCacheKey resolves key, step stepIndex's cache.key, from v, as
// ResolveTask resolves its task's strings. A key that would resolve past
// v1alpha1.MaxCacheKeyLength fails with a *CacheKeyTooLongError before
// anything is built; a reference to an output the step did not write
// with a *MissingOutputError.
func ResolveCacheKey(stepIndex int, key string, v Values) (string, error) {
	if err := checkKeySize(stepIndex, key, v, false); err != nil {
		return "", err
	}
	const fieldName = "cache.key"
	res, err := Expand(key, func(r Ref) (string, error) { return v.lookup(stepIndex, fieldName, r) })
	var se *SyntaxError
	if errors.As(err, &se) {
		err = fmt.Errorf("%s: %w", fieldName, err)
	}
	return res, err
}

// checkKeySize fails with a *CacheKeyTooLongError when key renders past
// v1alpha1.MaxCacheKeyLength with v's values, counting lengths only.
func checkKeySize(stepIndex int, key string, v Values, paramsOnly bool) error {
	n := renderedLen(key, func(r Ref) int { return len(v.value(stepIndex, r)) })
	if n <= v1alpha1.MaxCacheKeyLength {
		return nil
	}
	return &CacheKeyTooLongError{Step: v.stepName(stepIndex), StepIndex: stepIndex, Size: n, ParamsOnly: paramsOnly}
}

// checkCache checks a step's cache: only on a step that runs one task,
// its key's references as the task's, and its length with params alone.
func (v *workflowValidator) checkCache(self ownerStep, p *field.Path, step *v1alpha1.WorkflowStep, values Values, at int) {
	c := step.Cache
	if c == nil {
		return
	}
	p = p.Child("cache")
	switch {
	case step.ForEach != nil:
		v.errs = append(v.errs, field.Invalid(p, field.OmitValueType{}, self.label()+": a forEach step cannot have a cache: cache is for a step that runs one task"))
	case step.Approval != nil:
		v.errs = append(v.errs, field.Invalid(p, field.OmitValueType{}, self.label()+": an approval step cannot have a cache: it runs no task"))
	}
	kp := p.Child("key")
	if c.Key == "" {
		v.errs = append(v.errs, field.Required(kp, self.label()+": cache needs a key naming what the step's outputs depend on, such as ${params.commit}"))
		return
	}
	if len(c.Key) > v1alpha1.MaxCacheKeyLength {
		v.errs = append(v.errs, field.TooLong(kp, field.OmitValueType{}, v1alpha1.MaxCacheKeyLength))
		return
	}
	v.check(self, kp, c.Key)
	if err := checkKeySize(at, c.Key, values, true); err != nil {
		if tl, ok := err.(*CacheKeyTooLongError); ok && self.finally {
			tl.StepIndex, tl.Finally = self.index, true
		}
		v.errs = append(v.errs, field.Invalid(kp, field.OmitValueType{}, err.Error()))
	}
	if c.MaxAge != nil && (c.MaxAge.Duration < minCacheAge || c.MaxAge.Duration > maxCacheAge) {
		v.errs = append(v.errs, field.Invalid(p.Child("maxAge"), c.MaxAge.Duration.String(), self.label()+": cache.maxAge must be between 1s and 8760h (unset: any age)"))
	}
}

// The bounds of cache.maxAge, as the CRD's rule has them.
const (
	minCacheAge = time.Second
	maxCacheAge = 8760 * time.Hour
)
