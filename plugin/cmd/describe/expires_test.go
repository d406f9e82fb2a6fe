package describe_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/describe"
)

func TestExpires(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	at := metav1.NewTime(now.Add(14*time.Minute + 30*time.Second))
	cases := map[string]struct {
		e    *schedv1.Expiry
		want string
	}{
		"none": {},
		"running, tier default": {e: &schedv1.Expiry{TTLAfterFinished: metav1.Duration{Duration: 15 * time.Minute}, Source: schedv1.ExpiryFromTierDefault, Tier: "free"},
			want: "15m after it finishes (tier free's default ttlAfterFinished)"},
		"finished, spec": {e: &schedv1.Expiry{TTLAfterFinished: metav1.Duration{Duration: 15 * time.Minute}, Source: schedv1.ExpiryFromSpec, DeleteTime: &at},
			want: "Wed, 02 Jan 2030 03:18:35 +0000 (in 14m: 15m after it finished, by its spec.ttlAfterFinished)"},
		"capped": {e: &schedv1.Expiry{TTLAfterFinished: metav1.Duration{Duration: 24 * time.Hour}, Source: schedv1.ExpiryFromTierMaximum, Tier: "free"},
			want: "24h after it finishes (tier free's maximum ttlAfterFinished)"},
	}
	for name, tc := range cases {
		if got := describe.Expires(tc.e, now); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
