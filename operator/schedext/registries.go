package schedext

import (
	"fmt"
	"strings"
)

// Refused says why a SchedExt's own image (spec.scheduler.image) may not
// run, or "" when it may: with an allow list, the image must come from one
// of its registries or repositories. Images the operator resolves from a
// well-known name are the cluster admin's own setting and always allowed.
func Refused(image string, fromSpec bool, allowed []string) string {
	if !fromSpec || len(allowed) == 0 || AllowedImage(image, allowed) {
		return ""
	}
	return fmt.Sprintf("image %s is not from a registry the cluster admin allows (%s); use an image from one of them, or ask for yours to be added (--allowed-scheduler-registries)",
		image, strings.Join(allowed, ", "))
}

// AllowedImage reports whether image is under one of the allowed prefixes:
// a registry (registry.example.com) or a repository path in it
// (ghcr.io/sched-ext). Docker Hub's short names are expanded first, as the
// container runtime does (busybox is docker.io/library/busybox), so an
// allow list cannot be bypassed by leaving out the registry.
func AllowedImage(image string, allowed []string) bool {
	full := normalizeImage(image)
	for _, a := range allowed {
		a = strings.TrimSuffix(strings.TrimSpace(a), "/")
		if a != "" && strings.HasPrefix(full, a+"/") {
			return true
		}
	}
	return false
}

func normalizeImage(image string) string {
	first, rest, found := strings.Cut(image, "/")
	switch {
	case !found:
		return "docker.io/library/" + image
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return image
	}
	return "docker.io/" + first + "/" + rest
}
