package holdover

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// The bounds of a foreground wait (W1, M2, M3). They are defined here once:
// the tool checks a model's timeout in seconds against them, the worker a
// request's timeoutMs, and the projection which calls it tracks.
const (
	// MaxTimeoutMs is the longest foreground wait in milliseconds: the
	// largest timer delay a JavaScript Client can run, so that a Client and
	// the worker agree on every deadline the worker accepts.
	MaxTimeoutMs = math.MaxInt32
	// MaxTimeout is [MaxTimeoutMs] as a duration.
	MaxTimeout = MaxTimeoutMs * time.Millisecond
	// MaxTimeoutSeconds is the largest whole number of seconds a tool call
	// may ask for: its milliseconds must stay within [MaxTimeoutMs].
	MaxTimeoutSeconds = MaxTimeoutMs / 1000
	// BlockingTimeout is the timed schema's timeout that waits until the
	// user answers (M3): a keyed blocking ask without a deadline.
	BlockingTimeout = -1
)

// ValidTimeoutSeconds reports whether a tool call's timeout, in seconds,
// is [BlockingTimeout] or 1..[MaxTimeoutSeconds] (M2, M3).
func ValidTimeoutSeconds(seconds int64) bool {
	return seconds == BlockingTimeout || (seconds >= 1 && seconds <= MaxTimeoutSeconds)
}

// TimeoutFromMs checks a requested timeout in milliseconds and returns it as
// a duration. It must be a safe integer in 1..[MaxTimeoutMs]; anything else
// (0, negative, fractional, NaN, infinite, too large) is BAD_TIMEOUT (W1).
func TimeoutFromMs(ms float64) (time.Duration, error) {
	return checkTimeoutMs(ms, formatMs(ms))
}

// ParseTimeoutMs is [TimeoutFromMs] for a timeout as it arrived in JSON.
// Decoding the field as a [json.Number] rather than an integer lets a
// fractional or oversized value fail BAD_TIMEOUT instead of a decode error.
// A missing field, and text that is not a JSON number, are BAD_TIMEOUT too;
// every message quotes the number as it was sent.
func ParseTimeoutMs(n json.Number) (time.Duration, error) {
	s := string(n)
	switch {
	case s == "":
		return 0, Newf(CodeBadTimeout, "timeoutMs is missing: the foreground wait in milliseconds, 1..%d", MaxTimeoutMs)
	case (s[0] != '-' && (s[0] < '0' || s[0] > '9')) || !json.Valid([]byte(s)):
		return 0, Newf(CodeBadTimeout, "timeoutMs %s is not a JSON number of milliseconds", s)
	}
	ms, err := n.Float64()
	if err != nil {
		// Only a magnitude beyond float64 gets here; it is out of range.
		return 0, Newf(CodeBadTimeout, "timeout %s ms is outside 1..%d ms", s, MaxTimeoutMs)
	}
	return checkTimeoutMs(ms, s)
}

// checkTimeoutMs applies the W1 rule to ms, naming it as text in errors.
func checkTimeoutMs(ms float64, text string) (time.Duration, error) {
	switch {
	case math.IsNaN(ms) || math.IsInf(ms, 0):
		return 0, Newf(CodeBadTimeout, "timeout %s ms is not a number of milliseconds", text)
	case ms != math.Trunc(ms):
		return 0, Newf(CodeBadTimeout, "timeout %s ms is not a whole number of milliseconds", text)
	case ms < 1 || ms > MaxTimeoutMs:
		return 0, Newf(CodeBadTimeout, "timeout %s ms is outside 1..%d ms", text, MaxTimeoutMs)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// formatMs writes ms as a person would: whole numbers without an exponent.
func formatMs(ms float64) string {
	if math.Abs(ms) < 1e21 {
		return strconv.FormatFloat(ms, 'f', -1, 64)
	}
	return strconv.FormatFloat(ms, 'g', -1, 64)
}
