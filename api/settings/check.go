package settings

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-sched/kubectl-sched/api/secretstore"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// The Check functions of All.

var imageRef = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._/:@-]*$`)

func registries(_, v string) string {
	for _, r := range strings.Split(v, ",") {
		if r = strings.TrimSpace(r); strings.Contains(r, "://") || strings.ContainsAny(r, " @") {
			return fmt.Sprintf("holds %q: give registry hosts or repositories (ghcr.io/sched-ext), comma-separated", r)
		}
	}
	return ""
}

func ingressClasses(_, v string) string {
	for _, c := range strings.Split(v, ",") {
		if c = strings.TrimSpace(c); c != "" && len(validation.IsDNS1123Subdomain(c)) > 0 {
			return fmt.Sprintf("holds %q: give IngressClass names (lower-case DNS names), comma-separated", c)
		}
	}
	return ""
}

func keyTemplate(_, v string) string { return secretstore.TemplateProblem(v) }

// annotationDomains: DNS names (an annotation key's prefix is one), or *.
func annotationDomains(_, v string) string {
	for _, d := range strings.Split(v, ",") {
		if d = strings.TrimSpace(d); d != "" && d != "*" && len(validation.IsDNS1123Subdomain(d)) > 0 {
			return fmt.Sprintf("holds %q: give lower-case DNS domains (example.com covers its subdomains) or *, comma-separated", d)
		}
	}
	return ""
}

func reservedPaths(_, v string) string {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); strings.ContainsAny(p, " '\"\\") || strings.Contains(p, "{{") {
			return fmt.Sprintf("holds %q: give paths of the store (secret,shared), comma-separated", p)
		}
	}
	return ""
}

func nonEmpty(_, v string) string {
	if v == "" {
		return "must not be empty"
	}
	return ""
}

func dnsName(_, v string) string {
	if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
		return "is not a DNS name: " + strings.Join(errs, "; ")
	}
	return ""
}

func label(_, v string) string {
	if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
		return "is not a namespace name: " + strings.Join(errs, "; ")
	}
	return ""
}

func optionalLabel(k, v string) string {
	if v == "" {
		return ""
	}
	return label(k, v)
}

func oneOf(values ...string) func(_, v string) string {
	return func(_, v string) string {
		if !slices.Contains(values, v) {
			return "must be " + strings.Join(values, " or ")
		}
		return ""
	}
}

func priorityClass(k, v string) string {
	if !slices.Contains(schedv1.Priorities, schedv1.Priority(k)) {
		return fmt.Sprintf("%q is not a placement priority (Critical, High, Medium or Low)", k)
	}
	if errs := validation.IsDNS1123Subdomain(v); v != "" && len(errs) > 0 {
		return fmt.Sprintf("%q is not a PriorityClass name", v)
	}
	return ""
}

func schedulerImage(k, v string) string {
	if !slices.Contains(schedv1.WellKnownSchedulers, k) {
		return fmt.Sprintf("%q is not a well-known scheduler (%s); a SchedExt with its own image sets scheduler.image", k, strings.Join(schedv1.WellKnownSchedulers, ", "))
	}
	if v != "" && !imageRef.MatchString(v) {
		return fmt.Sprintf("%q is not an image reference", v)
	}
	return ""
}

func labelSelector(_, v string) string {
	if _, err := labels.Parse(v); err != nil {
		return "is not a label selector: " + err.Error()
	}
	return ""
}

func duration(_, v string) string {
	if d, err := time.ParseDuration(v); err != nil || d < 0 {
		return "is not a duration of 0 or more (10m, 168h)"
	}
	return ""
}

func positiveInt(_, v string) string {
	if n, err := strconv.Atoi(v); err != nil || n < 1 {
		return "is not a whole number of 1 or more"
	}
	return ""
}

func positiveNumber(_, v string) string {
	if f, err := strconv.ParseFloat(v, 64); err != nil || f <= 0 {
		return "is not a number above 0"
	}
	return ""
}

func controllerWorkers(k, v string) string {
	if !slices.Contains(Controllers, k) {
		return fmt.Sprintf("%q is not a controller (%s)", k, strings.Join(Controllers, ", "))
	}
	if v != "" && positiveInt(k, v) != "" {
		return fmt.Sprintf("%q is not a whole number of workers of 1 or more", v)
	}
	return ""
}

// splitList reads a comma-separated list, without empty items.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
