package bench

import (
	"slices"
	"time"
)

// Samples are the durations one measurement took, in the order taken.
type Samples []time.Duration

// Quantile is the q-quantile (0 ≤ q ≤ 1) of s by the nearest rank; 0 for
// no samples.
func (s Samples) Quantile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(s))
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// Row is one measured path beside its raw primitive.
type Row struct {
	// Key names the row in benchmark metrics: "deliver".
	Key string
	// Name says what the path is: "askTimed → Client delivery".
	Name string
	// RawName says what the primitive is: "core request-reply".
	RawName string
	Path    Samples
	Raw     Samples
}

// Ratio is the path's q-quantile over the primitive's.
func (r Row) Ratio(q float64) float64 {
	raw := r.Raw.Quantile(q)
	if raw == 0 {
		return 0
	}
	return float64(r.Path.Quantile(q)) / float64(raw)
}
