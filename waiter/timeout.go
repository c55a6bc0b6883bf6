package waiter

import (
	"encoding/json"
	"math"
	"time"

	"github.com/holdover-dev/holdover"
)

// MaxTimeoutMs is the longest foreground wait in milliseconds (W1): the
// largest timer delay a JavaScript Client can run, so that a Client and the
// Host agree on every deadline the Host accepts.
const MaxTimeoutMs = math.MaxInt32

// MaxTimeout is [MaxTimeoutMs] as a duration.
const MaxTimeout = MaxTimeoutMs * time.Millisecond

// TimeoutFromMs checks a requested timeout in milliseconds and returns it as
// a duration. It must be a safe integer in 1..[MaxTimeoutMs]; anything else
// (0, negative, fractional, NaN, infinite, too large) is BAD_TIMEOUT (W1).
func TimeoutFromMs(ms float64) (time.Duration, error) {
	switch {
	case math.IsNaN(ms) || math.IsInf(ms, 0):
		return 0, holdover.Newf(holdover.CodeBadTimeout, "timeout %v ms is not a number of milliseconds", ms)
	case ms != math.Trunc(ms):
		return 0, holdover.Newf(holdover.CodeBadTimeout, "timeout %v ms is not a whole number of milliseconds", ms)
	case ms < 1 || ms > MaxTimeoutMs:
		return 0, holdover.Newf(holdover.CodeBadTimeout, "timeout %v ms is outside 1..%d ms", ms, MaxTimeoutMs)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// ParseTimeoutMs is [TimeoutFromMs] for a timeout as it arrived in JSON.
// Decoding the field as a [json.Number] rather than an integer lets a
// fractional or oversized value fail BAD_TIMEOUT instead of a decode error.
// Text that is not a JSON number is BAD_TIMEOUT too.
func ParseTimeoutMs(n json.Number) (time.Duration, error) {
	s := string(n)
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) || !json.Valid([]byte(s)) {
		return 0, holdover.Newf(holdover.CodeBadTimeout, "timeout %q is not a JSON number", s)
	}
	ms, err := n.Float64()
	if err != nil {
		// Only a magnitude beyond float64 gets here; it is out of range.
		return 0, holdover.Newf(holdover.CodeBadTimeout, "timeout %s ms is outside 1..%d ms", s, MaxTimeoutMs)
	}
	return TimeoutFromMs(ms)
}
