//go:build !crashpoint

package crashpoint

// Armed is false: this build has no crash points.
const Armed = false

// Hit does nothing: the build has no crash points, whatever the
// environment says.
func Hit(string) {}
