package waiter

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

func TestW1TimeoutFromMs(t *testing.T) {
	for _, ms := range []float64{0, 1.5, 2147483648, -1, -0.5, 0.999, math.NaN(), math.Inf(1), math.Inf(-1), 1 << 53} {
		_, err := TimeoutFromMs(ms)
		assertCode(t, holdover.CodeBadTimeout, err)
	}
	for ms, want := range map[float64]time.Duration{
		1:          time.Millisecond,
		120000:     2 * time.Minute,
		2147483647: MaxTimeout,
	} {
		got, err := TimeoutFromMs(ms)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

func TestW1ParseTimeoutMs(t *testing.T) {
	for _, raw := range []string{"0", "1.5", "2147483648", "-1", "-0", "1e400", "-1e400", "1e-400",
		`"5"`, "NaN", "Inf", "0x10", "abc", "", " 5", "5 ", "true", "null", "[5]", "+5", "05"} {
		_, err := ParseTimeoutMs(json.Number(raw))
		assertCode(t, holdover.CodeBadTimeout, err)
	}
	for raw, want := range map[string]time.Duration{
		"1":          time.Millisecond,
		"1.0":        time.Millisecond, // a safe integer, however it is written
		"1e3":        time.Second,
		"2147483647": MaxTimeout,
	} {
		got, err := ParseTimeoutMs(json.Number(raw))
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
}

func TestW1ParseTimeoutMsFromAskTimedJSON(t *testing.T) {
	var req struct {
		TimeoutMs json.Number `json:"timeoutMs"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"timeoutMs":1.5}`), &req))
	_, err := ParseTimeoutMs(req.TimeoutMs)
	assertCode(t, holdover.CodeBadTimeout, err)
}

// FuzzParseTimeoutMs checks that every accepted timeout is a whole number of
// milliseconds in range that reads back the same, and that every rejection
// is BAD_TIMEOUT.
func FuzzParseTimeoutMs(f *testing.F) {
	for _, seed := range []string{"1", "0", "1.5", "2147483647", "2147483648", "-1", "1e3", "1e400", "NaN", `"7"`, "", "9007199254740993"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		d, err := ParseTimeoutMs(json.Number(raw))
		if err != nil {
			if code := holdover.CodeOf(err); code != holdover.CodeBadTimeout {
				t.Fatalf("ParseTimeoutMs(%q): code %q, want BAD_TIMEOUT: %v", raw, code, err)
			}
			return
		}
		if d < time.Millisecond || d > MaxTimeout || d%time.Millisecond != 0 {
			t.Fatalf("ParseTimeoutMs(%q) = %v, outside 1..%d ms", raw, d, MaxTimeoutMs)
		}
		back, err := ParseTimeoutMs(json.Number(strconv.FormatInt(d.Milliseconds(), 10)))
		if err != nil || back != d {
			t.Fatalf("ParseTimeoutMs(%q) = %v does not read back: %v, %v", raw, d, back, err)
		}
	})
}
