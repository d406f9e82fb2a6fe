package scale

import (
	"strconv"
	"time"
)

func mib(n float64) float64 { return n / (1 << 20) }

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
}
