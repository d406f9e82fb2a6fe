// Package operatorstatus is what the operator reports about itself, and
// where: annotations of a Lease in its own namespace, the one kind (besides
// Events) its confinement policy lets it write there. `kubectl sched
// version` reads them.
package operatorstatus

import (
	"encoding/json"
	"fmt"
)

const (
	// LeaseName is the status Lease in the operator's namespace. It is not
	// the leader Lease: leader election rewrites that one every few
	// seconds, and it exists only while leader election is on.
	LeaseName = "kubectl-sched-operator-status"
	// AnnotationOptionalAPIs holds the optional APIs as JSON
	// ([]OptionalAPI), rewritten when one of them changes.
	AnnotationOptionalAPIs = "sched.kubectl-sched.dev/optional-apis"
)

// State says whether the operator uses an optional API.
type State string

const (
	// InUse means the cluster serves it and the operator's settings use it.
	InUse State = "InUse"
	// Installed means the cluster serves it, but the settings do not use it, or
	// the operator is still starting its watch.
	Installed State = "Installed"
	// NotInstalled means the cluster does not serve the version the operator uses.
	NotInstalled State = "NotInstalled"
)

// Text is the state as the plugin prints it.
func (s State) Text() string {
	switch s {
	case InUse:
		return "in use"
	case Installed:
		return "installed"
	case NotInstalled:
		return "not installed"
	}
	return string(s)
}

// OptionalAPI is one optional API as the operator sees it.
type OptionalAPI struct {
	// Name is the project's name: External Secrets, cert-manager, Traefik.
	Name string `json:"name"`
	// API is the group, version and kind the operator uses.
	API   string `json:"api"`
	State State  `json:"state"`
	// Message says what that means for apps, or why it is not served.
	Message string `json:"message,omitempty"`
}

// String is one line: "cert-manager (cert-manager.io/v1 Certificate): in use; ...".
func (a OptionalAPI) String() string {
	s := fmt.Sprintf("%s (%s): %s", a.Name, a.API, a.State.Text())
	if a.Message != "" {
		s += "; " + a.Message
	}
	return s
}

// Encode is the annotation's value.
func Encode(apis []OptionalAPI) string {
	b, err := json.Marshal(apis)
	if err != nil {
		// Strings only: cannot happen.
		panic(err)
	}
	return string(b)
}

// Decode reads the annotation's value.
func Decode(value string) ([]OptionalAPI, error) {
	var apis []OptionalAPI
	if err := json.Unmarshal([]byte(value), &apis); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON list of optional APIs: %w", AnnotationOptionalAPIs, err)
	}
	return apis, nil
}
