package holdover_test

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
		_, err := holdover.TimeoutFromMs(ms)
		assert.Equal(t, holdover.CodeBadTimeout, holdover.CodeOf(err), "%v", err)
	}
	for ms, want := range map[float64]time.Duration{
		1:          time.Millisecond,
		120000:     2 * time.Minute,
		2147483647: holdover.MaxTimeout,
	} {
		got, err := holdover.TimeoutFromMs(ms)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

func TestW1ParseTimeoutMs(t *testing.T) {
	for _, raw := range []string{"0", "1.5", "2147483648", "-1", "-0", "1e400", "-1e400", "1e-400",
		`"5"`, "NaN", "Inf", "0x10", "abc", "", " 5", "5 ", "true", "null", "[5]", "+5", "05"} {
		_, err := holdover.ParseTimeoutMs(json.Number(raw))
		assert.Equal(t, holdover.CodeBadTimeout, holdover.CodeOf(err), "%v", err)
	}
	for raw, want := range map[string]time.Duration{
		"1":          time.Millisecond,
		"1.0":        time.Millisecond, // a safe integer, however it is written
		"1e3":        time.Second,
		"2147483647": holdover.MaxTimeout,
	} {
		got, err := holdover.ParseTimeoutMs(json.Number(raw))
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
}

func TestW1ParseTimeoutMsFromAskTimedJSON(t *testing.T) {
	var req struct {
		TimeoutMs json.Number `json:"timeoutMs"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"timeoutMs":1.5}`), &req))
	_, err := holdover.ParseTimeoutMs(req.TimeoutMs)
	assert.Equal(t, holdover.CodeBadTimeout, holdover.CodeOf(err), "%v", err)
}

// FuzzParseTimeoutMs checks that every accepted timeout is a whole number of
// milliseconds in range that reads back the same, and that every rejection
// is BAD_TIMEOUT.
func FuzzParseTimeoutMs(f *testing.F) {
	for _, seed := range []string{"1", "0", "1.5", "2147483647", "2147483648", "-1", "1e3", "1e400", "NaN", `"7"`, "", "9007199254740993"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		d, err := holdover.ParseTimeoutMs(json.Number(raw))
		if err != nil {
			if code := holdover.CodeOf(err); code != holdover.CodeBadTimeout {
				t.Fatalf("holdover.ParseTimeoutMs(%q): code %q, want BAD_TIMEOUT: %v", raw, code, err)
			}
			return
		}
		if d < time.Millisecond || d > holdover.MaxTimeout || d%time.Millisecond != 0 {
			t.Fatalf("holdover.ParseTimeoutMs(%q) = %v, outside 1..%d ms", raw, d, holdover.MaxTimeoutMs)
		}
		back, err := holdover.ParseTimeoutMs(json.Number(strconv.FormatInt(d.Milliseconds(), 10)))
		if err != nil || back != d {
			t.Fatalf("holdover.ParseTimeoutMs(%q) = %v does not read back: %v, %v", raw, d, back, err)
		}
	})
}

// Issue 8: a rejected timeout says what is wrong with it, in the words it
// was sent: a missing field is missing, and integers stay integers.
func TestW1TimeoutErrorsSayWhatIsWrong(t *testing.T) {
	for raw, want := range map[string]string{
		"":           "timeoutMs is missing",
		"2147483648": "timeout 2147483648 ms is outside 1..2147483647 ms",
		"1.5":        "timeout 1.5 ms is not a whole number",
		`"60"`:       `timeoutMs "60" is not a JSON number`,
		"0":          "timeout 0 ms is outside",
	} {
		_, err := holdover.ParseTimeoutMs(json.Number(raw))
		assert.ErrorContains(t, err, want, raw)
	}
	_, err := holdover.TimeoutFromMs(2147483648)
	assert.ErrorContains(t, err, "timeout 2147483648 ms is outside 1..2147483647 ms")
	_, err = holdover.TimeoutFromMs(1 << 60)
	assert.NotContains(t, err.Error(), "e+", "no exponent below 1e21")
}

func TestTimeoutSecondsFollowTheMillisecondBound(t *testing.T) {
	assert.Equal(t, int64(2147483), int64(holdover.MaxTimeoutSeconds))
	for _, s := range []int64{holdover.BlockingTimeout, 1, holdover.MaxTimeoutSeconds} {
		assert.True(t, holdover.ValidTimeoutSeconds(s), s)
	}
	for _, s := range []int64{0, -2, holdover.MaxTimeoutSeconds + 1} {
		assert.False(t, holdover.ValidTimeoutSeconds(s), s)
	}
}
