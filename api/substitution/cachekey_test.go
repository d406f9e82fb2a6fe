package substitution

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestResolveCacheKey(t *testing.T) {
	tests := map[string]struct {
		step    int
		key     string
		want    string
		wantErr string
	}{
		"literal":              {step: 0, key: "fetch-v3", want: "fetch-v3"},
		"params and outputs":   {step: 2, key: "${params.tag}/${steps.fetch.output.rev}/${steps.1.output.digest}", want: "v1/abc123/sha256:${steps.0.output.src}"},
		"escape":               {step: 1, key: "$${params.tag}", want: "${params.tag}"},
		"exactly at its bound": {step: 0, key: strings.Repeat("k", v1alpha1.MaxCacheKeyLength-2) + "${params.tag}", want: strings.Repeat("k", v1alpha1.MaxCacheKeyLength-2) + "v1"},
		"past its bound once resolved": {
			step: 1, key: strings.Repeat("k", v1alpha1.MaxCacheKeyLength-5) + "${steps.0.output.src}",
			wantErr: `step 1 ("build"): cache.key resolves to 1028 bytes once its references are substituted, more than the 1024 a cache key may hold`,
		},
		"missing output": {
			step: 1, key: "${steps.fetch.output.nope}",
			wantErr: `cache.key uses ${steps.fetch.output.nope}, but step 0 ("fetch") did not output "nope"; its outputs are: rev, src`,
		},
		"syntax": {step: 1, key: "${params.tag", wantErr: `cache.key: "${params.tag" at byte 0 has no closing "}"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ResolveCacheKey(tc.step, tc.key, testValues())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("key %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateWorkflowCache(t *testing.T) {
	day := &metav1.Duration{Duration: 24 * time.Hour}
	tests := map[string]struct {
		edit func(*v1alpha1.WorkflowSpec)
		want field.ErrorList
	}{
		"a key with params and earlier outputs": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Steps[2].Cache = &v1alpha1.StepCache{Key: "${params.tag}-${steps.build.output.digest}", MaxAge: day}
			},
		},
		"a key using a later step's output": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Steps[0].Cache = &v1alpha1.StepCache{Key: "${steps.build.output.digest}"}
			},
			want: field.ErrorList{invalid("spec.steps[0].cache.key",
				`step "fetch" uses ${steps.build.output.digest}, but step "build" runs after it; a step can only use outputs of earlier steps`)},
		},
		"an undeclared param": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[0].Cache = &v1alpha1.StepCache{Key: "${params.nope}"} },
			want: field.ErrorList{notFoundErr("spec.steps[0].cache.key", `step "fetch" uses ${params.nope}, but spec.params has no param "nope"; params are: tag, registry`)},
		},
		"no key": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[0].Cache = &v1alpha1.StepCache{} },
			want: field.ErrorList{field.Required(field.NewPath("spec.steps[0].cache.key"), `step "fetch": cache needs a key naming what the step's outputs depend on, such as ${params.commit}`)},
		},
		"over its bound with params alone": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Params[0].Value = strings.Repeat("v", 1000)
				s.Steps[0].Cache = &v1alpha1.StepCache{Key: "${params.tag}${params.tag}"}
			},
			want: field.ErrorList{invalid("spec.steps[0].cache.key",
				`step 0 ("fetch"): cache.key resolves to 2000 bytes with its params alone, before any output is known, more than the 1024 a cache key may hold; put less in the key, such as a digest output instead of the content it names`)},
		},
		"on a forEach step": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Steps[0].ForEach = &v1alpha1.ForEach{Items: []string{"a"}}
				s.Steps[0].Cache = &v1alpha1.StepCache{Key: "k"}
			},
			want: field.ErrorList{invalid("spec.steps[0].cache", `step "fetch": a forEach step cannot have a cache: cache is for a step that runs one task`)},
		},
		"maxAge out of bounds": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Steps[0].Cache = &v1alpha1.StepCache{Key: "k", MaxAge: &metav1.Duration{Duration: time.Millisecond}}
			},
			want: field.ErrorList{field.Invalid(field.NewPath("spec.steps[0].cache.maxAge"), "1ms", `step "fetch": cache.maxAge must be between 1s and 8760h (unset: any age)`)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := goodWorkflow()
			tc.edit(spec)
			if diff := cmp.Diff(tc.want, ValidateWorkflow(spec)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
