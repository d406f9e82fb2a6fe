package schedext

import (
	"strings"
	"testing"
)

func TestAllowedImage(t *testing.T) {
	allowed := []string{"ghcr.io/sched-ext", "registry.example.com/", "docker.io/library"}
	cases := map[string]bool{
		"ghcr.io/sched-ext/scx:v1.0.14":      true,
		"ghcr.io/sched-ext/sub/scx@sha256:0": true,
		"ghcr.io/sched-ext-evil/scx:1":       false, // a prefix of the name is not the repository
		"ghcr.io/other/scx:1":                false,
		"registry.example.com/team/scx:2":    true,
		"registry.example.com:5000/scx:2":    false, // another host (port)
		"registry.example.com.evil.io/scx:2": false,
		"busybox:1.37":                       true,  // docker.io/library/busybox
		"someone/scx:1":                      false, // docker.io/someone/scx
		"localhost/scx:1":                    false,
		"docker.io/library/alpine:3":         true,
	}
	for image, want := range cases {
		if got := AllowedImage(image, allowed); got != want {
			t.Errorf("AllowedImage(%q) = %v, want %v", image, got, want)
		}
	}
	if AllowedImage("ghcr.io/sched-ext/scx:1", nil) {
		t.Error("an empty list allows nothing through AllowedImage; Refused treats it as no list")
	}
	if msg := Refused("evil.io/scx:1", true, allowed); !strings.Contains(msg, "ghcr.io/sched-ext, registry.example.com/, docker.io/library") || !strings.Contains(msg, "evil.io/scx:1") {
		t.Errorf("Refused message %q does not name the image and the allow list", msg)
	}
	if Refused("evil.io/scx:1", false, allowed) != "" || Refused("evil.io/scx:1", true, nil) != "" {
		t.Error("operator-resolved images, and any image without a list, are allowed")
	}
}
