package buildinfo

import "testing"

func TestSkewWarning(t *testing.T) {
	cases := []struct {
		client, operator string
		want             string
	}{
		{"v1.2.3", "v1.2.3", ""},
		{"v1.2.0", "v1.2.9", ""}, // patch releases are compatible
		{"v1.2.0", "1.2.1", ""},
		{"v1.3.0-rc.1", "v1.3.2", ""},
		{"v1.2.0", "v1.3.0", "Warning: the plugin (v1.2.0) is older than the operator (v1.3.0): upgrade it with 'kubectl krew upgrade sched'."},
		{"v2.0.0", "v1.9.9", "Warning: the operator (v1.9.9) is older than the plugin (v2.0.0): upgrade it with 'kubectl sched install'."},
		{"v1.4.1", "v1.3.7", "Warning: the operator (v1.3.7) is older than the plugin (v1.4.1): upgrade it with 'kubectl sched install'."},
		{"v0.9.0", "v1.0.0", "Warning: the plugin (v0.9.0) is older than the operator (v1.0.0): upgrade it with 'kubectl krew upgrade sched'."},
		// Not releases: nothing to compare.
		{"devel", "v1.3.0", ""},
		{"(devel)", "v1.3.0", ""},
		{"", "v1.3.0", ""},
		{"v0.0.0-20260102030405-abcdef012345", "v1.3.0", ""},
		{"v1.3.0", "", ""},
		{"v1.3.0", "latest", ""},
		{"v1.3.0", "unknown", ""},
		{"v1.3", "v1.4.0", ""},
	}
	for _, tc := range cases {
		if got := SkewWarning(tc.client, tc.operator); got != tc.want {
			t.Errorf("SkewWarning(%q, %q) = %q, want %q", tc.client, tc.operator, got, tc.want)
		}
	}
}

func TestMajorMinor(t *testing.T) {
	for v, want := range map[string]string{"v1.2.3": "1.2", "1.12.0-rc.1": "1.12", "devel": "", "": "", "v0.0.0-20260102030405-abcdef012345": "", "v1.2": ""} {
		if got := MajorMinor(v); got != want {
			t.Errorf("MajorMinor(%q) = %q, want %q", v, got, want)
		}
	}
}
