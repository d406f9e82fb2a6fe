package testenv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// What benchmarks read of a process's Prometheus metrics: the operator's
// (controller-runtime's registry) and kube-apiserver's.

// Sample is one line of a Prometheus text exposition.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Samples is a scrape: its samples by metric name.
type Samples map[string][]Sample

// ParseMetrics reads the Prometheus text format: enough of it for the
// API server's and controller-runtime's metrics (no timestamps, label
// values without escaped quotes).
func ParseMetrics(r io.Reader) (Samples, error) {
	out := Samples{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s := Sample{Labels: map[string]string{}}
		var rest string
		if i := strings.IndexByte(line, '{'); i >= 0 {
			s.Name = line[:i]
			end := strings.LastIndexByte(line, '}')
			if end < i {
				continue
			}
			for _, kv := range splitLabels(line[i+1 : end]) {
				k, v, ok := strings.Cut(kv, "=")
				if ok {
					s.Labels[k] = strings.Trim(v, `"`)
				}
			}
			rest = strings.TrimSpace(line[end+1:])
		} else {
			name, value, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			s.Name, rest = name, value
		}
		if f := strings.Fields(rest); len(f) > 0 {
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				continue
			}
			s.Value = v
		}
		out[s.Name] = append(out[s.Name], s)
	}
	return out, sc.Err()
}

// splitLabels splits k="v",k2="v2" at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// Sum adds the samples of name whose labels hold every pair of match.
func (s Samples) Sum(name string, match map[string]string) float64 {
	t := 0.0
	for _, x := range s[name] {
		if matches(x.Labels, match) {
			t += x.Value
		}
	}
	return t
}

// By adds the samples of name that hold match, grouped by the values of keys.
func (s Samples) By(name string, match map[string]string, keys ...string) map[string]float64 {
	out := map[string]float64{}
	for _, x := range s[name] {
		if !matches(x.Labels, match) {
			continue
		}
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = x.Labels[k]
		}
		out[strings.Join(parts, " ")] += x.Value
	}
	return out
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// MetricsDelta is after's value less before's for every sample, by name and labels.
func MetricsDelta(after, before Samples) Samples {
	key := func(x Sample) string {
		keys := make([]string, 0, len(x.Labels))
		for k := range x.Labels {
			keys = append(keys, k+"="+x.Labels[k])
		}
		sort.Strings(keys)
		return strings.Join(keys, ",")
	}
	out := Samples{}
	for name, xs := range after {
		old := map[string]float64{}
		for _, x := range before[name] {
			old[key(x)] = x.Value
		}
		for _, x := range xs {
			x.Value -= old[key(x)]
			out[name] = append(out[name], x)
		}
	}
	return out
}

// Quantile estimates the q-quantile of a histogram's buckets (the
// _bucket samples that hold match, summed by le) as the upper bound of the
// bucket it falls in; +Inf when it falls past the last bound.
func (s Samples) Quantile(name string, match map[string]string, q float64) float64 {
	byLE := s.By(name+"_bucket", match, "le")
	type bucket struct{ le, n float64 }
	var bs []bucket
	for le, n := range byLE {
		v, err := strconv.ParseFloat(le, 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{v, n})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return 0
	}
	total := bs[len(bs)-1].n
	for _, b := range bs {
		if b.n >= q*total {
			return b.le
		}
	}
	return math.Inf(1)
}

// ScrapeMetrics reads a metrics endpoint over plain HTTP.
func ScrapeMetrics(ctx context.Context, url string) (Samples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return ParseMetrics(resp.Body)
}

// ScrapeAPIServerMetrics reads kube-apiserver's /metrics as the admin.
func ScrapeAPIServerMetrics(ctx context.Context, cs kubernetes.Interface) (Samples, error) {
	rc, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return ParseMetrics(rc)
}

// WaitQuiet waits until the operator whose metrics are at url has nothing
// queued and has finished no reconcile for polls scrapes in a row, one
// every interval, and returns the last scrape; an error when ctx ends
// first, with what the last scrape saw.
func WaitQuiet(ctx context.Context, url string, every time.Duration, polls int) (Samples, error) {
	var last Samples
	var lastErr error
	quiet, reconciles := 0, -1.0
	err := wait.PollUntilContextCancel(ctx, every, true, func(ctx context.Context) (bool, error) {
		m, err := ScrapeMetrics(ctx, url)
		if err != nil {
			lastErr = err
			return false, nil
		}
		total, depth := m.Sum("controller_runtime_reconcile_total", nil), m.Sum("workqueue_depth", nil)
		if depth == 0 && total == reconciles {
			quiet++
		} else {
			quiet = 0
		}
		last, reconciles = m, total
		lastErr = fmt.Errorf("still reconciling (queued %v)", depth)
		return quiet >= polls, nil
	})
	if err != nil {
		return last, lastErr
	}
	return last, nil
}

// Percentile is the p-th percentile of d by nearest rank; 0 for none.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	idx := int(math.Ceil(float64(len(s))*p/100)) - 1
	return s[min(max(idx, 0), len(s)-1)]
}
