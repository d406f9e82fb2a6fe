package scale

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

	"k8s.io/client-go/kubernetes"
)

// sample is one line of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// samples is a scrape: its samples by metric name.
type samples map[string][]sample

// parseMetrics reads the Prometheus text format: enough of it for the
// API server's and controller-runtime's metrics (no timestamps, label
// values without escaped quotes).
func parseMetrics(r io.Reader) (samples, error) {
	out := samples{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{labels: map[string]string{}}
		var rest string
		if i := strings.IndexByte(line, '{'); i >= 0 {
			s.name = line[:i]
			end := strings.LastIndexByte(line, '}')
			if end < i {
				continue
			}
			for _, kv := range splitLabels(line[i+1 : end]) {
				k, v, ok := strings.Cut(kv, "=")
				if ok {
					s.labels[k] = strings.Trim(v, `"`)
				}
			}
			rest = strings.TrimSpace(line[end+1:])
		} else {
			name, value, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			s.name, rest = name, value
		}
		if f := strings.Fields(rest); len(f) > 0 {
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				continue
			}
			s.value = v
		}
		out[s.name] = append(out[s.name], s)
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

// sum adds the samples of name whose labels hold every pair of match.
func (s samples) sum(name string, match map[string]string) float64 {
	t := 0.0
	for _, x := range s[name] {
		if matches(x.labels, match) {
			t += x.value
		}
	}
	return t
}

// by adds the samples of name that hold match, grouped by the values of keys.
func (s samples) by(name string, match map[string]string, keys ...string) map[string]float64 {
	out := map[string]float64{}
	for _, x := range s[name] {
		if !matches(x.labels, match) {
			continue
		}
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = x.labels[k]
		}
		out[strings.Join(parts, " ")] += x.value
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

// minus is after's value less before's for every sample, by name and labels.
func minus(after, before samples) samples {
	key := func(x sample) string {
		keys := make([]string, 0, len(x.labels))
		for k := range x.labels {
			keys = append(keys, k+"="+x.labels[k])
		}
		sort.Strings(keys)
		return strings.Join(keys, ",")
	}
	out := samples{}
	for name, xs := range after {
		old := map[string]float64{}
		for _, x := range before[name] {
			old[key(x)] = x.value
		}
		for _, x := range xs {
			x.value -= old[key(x)]
			out[name] = append(out[name], x)
		}
	}
	return out
}

// quantile estimates the q-quantile of a histogram's buckets (the
// _bucket samples that hold match, summed by le) as the upper bound of the
// bucket it falls in; +Inf when it falls past the last bound.
func (s samples) quantile(name string, match map[string]string, q float64) float64 {
	byLE := s.by(name+"_bucket", match, "le")
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

// scrapeURL reads a metrics endpoint over plain HTTP.
func scrapeURL(ctx context.Context, url string) (samples, error) {
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
	return parseMetrics(resp.Body)
}

// scrapeAPIServer reads kube-apiserver's /metrics as the admin.
func scrapeAPIServer(ctx context.Context, cs kubernetes.Interface) (samples, error) {
	rc, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return parseMetrics(rc)
}

func mib(n float64) float64 { return n / (1 << 20) }

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	idx := int(math.Ceil(float64(len(s))*p/100)) - 1
	return s[min(max(idx, 0), len(s)-1)]
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
}
