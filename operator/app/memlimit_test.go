package app

import "testing"

func TestSoftMemoryLimit(t *testing.T) {
	cases := map[string]struct {
		env     map[string]string
		want    int64
		wantOK  bool
		wantErr bool
	}{
		"none":                  {env: map[string]string{}},
		"90% of the limit":      {env: map[string]string{"MEMORY_LIMIT": "536870912"}, want: 483183821, wantOK: true},
		"GOMEMLIMIT wins":       {env: map[string]string{"MEMORY_LIMIT": "536870912", "GOMEMLIMIT": "300MiB"}},
		"empty":                 {env: map[string]string{"MEMORY_LIMIT": ""}},
		"a quantity, not bytes": {env: map[string]string{"MEMORY_LIMIT": "512Mi"}, wantErr: true},
		"zero":                  {env: map[string]string{"MEMORY_LIMIT": "0"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok, err := SoftMemoryLimit(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if (err != nil) != tc.wantErr || got != tc.want || ok != tc.wantOK {
				t.Errorf("SoftMemoryLimit = %d, %v, %v; want %d, %v, error %v", got, ok, err, tc.want, tc.wantOK, tc.wantErr)
			}
		})
	}
}
