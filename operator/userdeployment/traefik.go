package userdeployment

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation"
)

// safePath is the charset the CRD allows in ingress paths (see
// schedv1.IngressSpec.Path): no quote, backtick, bracket, space or
// operator, so a path cannot end a Traefik string and add a rule of its own.
var safePath = regexp.MustCompile(`^/[A-Za-z0-9._~%/+:@=-]*$`)

// traefikMatch is the IngressRoute rule for host and path prefix. Its
// structure is fixed: anything that could change it is refused rather than
// escaped (Traefik's backtick strings have no escape), which the CRD's
// validation makes the exception: only objects stored before it reach here.
func traefikMatch(host, path string) (string, error) {
	if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
		return "", fmt.Errorf("host %q cannot be routed by Traefik: %v", host, errs)
	}
	if !safePath.MatchString(path) {
		return "", fmt.Errorf("path %q cannot be routed: use only letters, digits and ._~%%/+:@=- after the leading /", path)
	}
	return "Host(`" + host + "`) && PathPrefix(`" + path + "`)", nil
}
