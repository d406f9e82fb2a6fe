package settings

import (
	"reflect"
	"testing"
	"time"
)

// TestTable: every field of Values is one setting's, of its kind, and no
// flag or variable is named twice.
func TestTable(t *testing.T) {
	var v Values
	fields := map[uintptr]string{}
	for i := range reflect.TypeOf(v).NumField() {
		f := reflect.ValueOf(&v).Elem().Field(i)
		fields[f.Addr().Pointer()] = reflect.TypeOf(v).Field(i).Name
	}
	v.SchedulerImages, v.PriorityClasses, v.ControllerWorkers = map[string]string{}, map[string]string{}, map[string]string{}
	maps := map[uintptr]string{
		reflect.ValueOf(v.SchedulerImages).Pointer():   "SchedulerImages",
		reflect.ValueOf(v.PriorityClasses).Pointer():   "PriorityClasses",
		reflect.ValueOf(v.ControllerWorkers).Pointer(): "ControllerWorkers",
	}
	flags, envs, covered := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range All {
		if flags[s.Flag] || envs[s.Env] || (s.Seed != "" && envs[s.Seed]) {
			t.Errorf("%s: flag or variable named twice", s.Flag)
		}
		flags[s.Flag], envs[s.Env], envs[s.Seed] = true, true, s.Seed != ""
		var name string
		var ok bool
		switch p := s.Field(&v).(type) {
		case *string:
			name, ok = fields[reflect.ValueOf(p).Pointer()], s.Kind == String
		case *bool:
			name, ok = fields[reflect.ValueOf(p).Pointer()], s.Kind == Bool
		case *[]string:
			name, ok = fields[reflect.ValueOf(p).Pointer()], s.Kind == List && s.Split != nil
		case map[string]string:
			name, ok = maps[reflect.ValueOf(p).Pointer()], s.Kind == Map && s.Metavar != ""
		case *int:
			name, ok = fields[reflect.ValueOf(p).Pointer()], s.Kind == Int
		case *float64:
			name, ok = fields[reflect.ValueOf(p).Pointer()], s.Kind == Number
		case *time.Duration:
			name, ok = fields[reflect.ValueOf(p).Pointer()], s.Kind == Duration
		}
		if !ok || name == "" {
			t.Errorf("%s: field %T does not fit kind %d (a List needs Split, a Map a Metavar)", s.Flag, s.Field(&v), s.Kind)
		}
		if covered[name] {
			t.Errorf("%s: field %s is another setting's too", s.Flag, name)
		}
		covered[name] = true
		if s.Help == "" || s.InstallHelp == "" || s.Default == "" || s.Doc == "" {
			t.Errorf("%s: help or docs text missing", s.Flag)
		}
	}
	if len(covered) != len(fields) {
		t.Errorf("settings cover %d of the %d fields of Values", len(covered), len(fields))
	}
}

// TestChecks: what install refuses of the scale settings, before the
// operator would fail to start on it.
func TestChecks(t *testing.T) {
	byFlag := map[string]Setting{}
	for _, s := range All {
		byFlag[s.Flag] = s
	}
	cases := map[string]struct {
		flag, key, value string
		want             string
	}{
		"a selector":                    {flag: "namespace-selector", value: "sched.kubectl-sched.dev/tier in (free,team)"},
		"no selector":                   {flag: "namespace-selector", value: ""},
		"a broken selector":             {flag: "namespace-selector", value: "tier in (free", want: "is not a label selector: unable to parse requirement: found '', expected: ',' or ')'"},
		"a TTL":                         {flag: "default-ttl", value: "168h"},
		"no TTL":                        {flag: "default-ttl", value: "0"},
		"days are not a Go duration":    {flag: "default-ttl", value: "7d", want: "is not a duration of 0 or more (10m, 168h)"},
		"a negative retention":          {flag: "succeeded-pod-retention", value: "-1m", want: "is not a duration of 0 or more (10m, 168h)"},
		"a fractional QPS":              {flag: "kube-api-qps", value: "7.5"},
		"no QPS":                        {flag: "kube-api-qps", value: "0", want: "is not a number above 0"},
		"a burst":                       {flag: "kube-api-burst", value: "200"},
		"a fractional burst":            {flag: "kube-api-burst", value: "2.5", want: "is not a whole number of 1 or more"},
		"no workers":                    {flag: "max-concurrent-reconciles", value: "0", want: "is not a whole number of 1 or more"},
		"a controller's workers":        {flag: "controller-workers", key: "workflow", value: "20"},
		"back to the default":           {flag: "controller-workers", key: "workflow", value: ""},
		"an unknown controller":         {flag: "controller-workers", key: "workflows", value: "20", want: `"workflows" is not a controller (agenttask, cronworkflow, schedext, tenant, userdeployment, workflow)`},
		"workers that are not a number": {flag: "controller-workers", key: "agenttask", value: "many", want: `"many" is not a whole number of workers of 1 or more`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, ok := byFlag[tc.flag]
			if !ok || s.Check == nil {
				t.Fatalf("no check for --%s", tc.flag)
			}
			if got := s.Check(tc.key, tc.value); got != tc.want {
				t.Errorf("Check(%q, %q) = %q, want %q", tc.key, tc.value, got, tc.want)
			}
		})
	}
}
