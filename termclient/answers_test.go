package termclient

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

var (
	single = holdover.Question{ID: "db", Question: "Which database?", Options: []holdover.Option{{Label: "Postgres (Recommended)"}, {Label: "SQLite"}, {Label: "Yes, both"}}}
	multi  = holdover.Question{ID: "regions", Question: "Which regions?", MultiSelect: true, Options: []holdover.Option{{Label: "eu"}, {Label: "us"}, {Label: "ap"}}}
	free   = holdover.Question{ID: "notes", Question: "Anything else?"}
)

// M5, M7: a typed line is a skip, options by number or label, or free
// text; "(Recommended)" labels and text pass through unchanged.
func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		q    holdover.Question
		line string
		want holdover.Answer
	}{
		{single, "", holdover.Answer{ID: "db", Selected: []string{}}},
		{single, "   ", holdover.Answer{ID: "db", Selected: []string{}}},
		{single, "1", holdover.Answer{ID: "db", Selected: []string{"Postgres (Recommended)"}}},
		{single, " 2 ", holdover.Answer{ID: "db", Selected: []string{"SQLite"}}},
		{single, "sqlite", holdover.Answer{ID: "db", Selected: []string{"SQLite"}}},
		{single, "Yes, both", holdover.Answer{ID: "db", Selected: []string{"Yes, both"}}},
		{single, "MySQL, please", holdover.Answer{ID: "db", Selected: []string{}, Custom: "MySQL, please"}},
		{single, "custom:2", holdover.Answer{ID: "db", Selected: []string{}, Custom: "2"}},
		{single, "1,1", holdover.Answer{ID: "db", Selected: []string{"Postgres (Recommended)"}}},
		{multi, "1,3", holdover.Answer{ID: "regions", Selected: []string{"eu", "ap"}}},
		{multi, "ap, eu", holdover.Answer{ID: "regions", Selected: []string{"ap", "eu"}}},
		{multi, "3, 1, 3", holdover.Answer{ID: "regions", Selected: []string{"ap", "eu"}}},
		{free, "42", holdover.Answer{ID: "notes", Selected: []string{}, Custom: "42"}},
		{free, "ship it", holdover.Answer{ID: "notes", Selected: []string{}, Custom: "ship it"}},
	} {
		got, err := ParseLine(tc.q, tc.line)
		require.NoError(t, err, "%s %q", tc.q.ID, tc.line)
		assert.Equal(t, tc.want, got, "%s %q", tc.q.ID, tc.line)
	}
}

// Numbers that are not options, several options for a single-select
// question, and custom: without text are errors, never free text.
func TestParseLineRefusesTypos(t *testing.T) {
	for _, tc := range []struct {
		q    holdover.Question
		line string
	}{
		{single, "4"}, {single, "0"}, {single, "1,4"}, {single, "1,2"}, {single, "custom:  "},
		{multi, "1,9"},
	} {
		_, err := ParseLine(tc.q, tc.line)
		assert.Equal(t, holdover.CodeBadAnswer, holdover.CodeOf(err), "%s %q: %v", tc.q.ID, tc.line, err)
	}
}

// D6: flags build a batch that names every question once, in question order.
func TestBatchFromFlags(t *testing.T) {
	qs := []holdover.Question{single, multi, free}
	got, err := BatchFromFlags(qs, []string{"regions=eu", "db=Postgres (Recommended)", "regions=3", "notes=custom:free text", "regions=custom:and mars"}, nil)
	require.NoError(t, err)
	assert.Equal(t, []holdover.Answer{
		{ID: "db", Selected: []string{"Postgres (Recommended)"}},
		{ID: "regions", Selected: []string{"eu", "ap"}, Custom: "and mars"},
		{ID: "notes", Selected: []string{}, Custom: "free text"},
	}, got)

	got, err = BatchFromFlags(qs, []string{"db=2", "regions=us,ap"}, []string{"notes"})
	require.NoError(t, err)
	assert.Equal(t, []holdover.Answer{
		{ID: "db", Selected: []string{"SQLite"}},
		{ID: "regions", Selected: []string{"us", "ap"}},
		{ID: "notes", Selected: []string{}},
	}, got)
}

func TestBatchFromFlagsRefusesWhatDoesNotFit(t *testing.T) {
	qs := []holdover.Question{single, free}
	for name, tc := range map[string]struct{ answers, skips []string }{
		"missing question":      {[]string{"db=1"}, nil},
		"unknown question":      {[]string{"db=1", "notes=custom:x", "other=1"}, nil},
		"unknown skip":          {[]string{"db=1"}, []string{"notes", "other"}},
		"no equals sign":        {[]string{"db"}, []string{"notes"}},
		"not an option":         {[]string{"db=MySQL"}, []string{"notes"}},
		"free text needs label": {[]string{"db=1", "notes=hello"}, nil},
		"two options of single": {[]string{"db=1", "db=2"}, []string{"notes"}},
		"answered and skipped":  {[]string{"db=1", "notes=custom:x"}, []string{"notes"}},
		"two custom answers":    {[]string{"db=1", "notes=custom:x", "notes=custom:y"}, nil},
		"empty custom":          {[]string{"db=1", "notes=custom:"}, nil},
	} {
		_, err := BatchFromFlags(qs, tc.answers, tc.skips)
		assert.Equal(t, holdover.CodeBadAnswer, holdover.CodeOf(err), "%s: %v", name, err)
	}
}

func TestBatchFromJSON(t *testing.T) {
	qs := []holdover.Question{single, free}
	got, err := BatchFromJSON(qs, `{"answers":[{"id":"notes","selected":[]},{"id":"db","selected":["SQLite"],"custom":"maybe"}]}`)
	require.NoError(t, err)
	assert.Equal(t, []holdover.Answer{{ID: "notes", Selected: []string{}}, {ID: "db", Selected: []string{"SQLite"}, Custom: "maybe"}}, got)
	for _, bad := range []string{``, `[]`, `{"answers":null}`, `{"answers":[{"id":"db","selected":[]}]}`, `{"answers":[{"id":"db"},{"id":"db"},{"id":"notes"}]}`} {
		_, err := BatchFromJSON(qs, bad)
		assert.Equal(t, holdover.CodeBadAnswer, holdover.CodeOf(err), "%q: %v", bad, err)
	}
}

// FuzzParseLine: whatever is typed, the result is an error with a code or
// an answer to this question that a batch can carry: options of the
// question only, one for a single-select question, text only as typed.
func FuzzParseLine(f *testing.F) {
	for _, seed := range []string{"", "1", "2,3", "custom:1", "sqlite", "Yes, both", "1,,2", "-1", "99999999999999999999", " ap , eu ", "custom:"} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, line string, multiSelect bool) {
		q := single
		if multiSelect {
			q = multi
		}
		a, err := ParseLine(q, line)
		if err != nil {
			require.NotEmpty(t, holdover.CodeOf(err), "%v", err)
			return
		}
		require.Equal(t, q.ID, a.ID)
		require.NotNil(t, a.Selected)
		require.NoError(t, holdover.ValidateBatch([]holdover.Question{q}, []holdover.Answer{a}))
		if !q.MultiSelect {
			require.LessOrEqual(t, len(a.Selected), 1)
		}
		for _, l := range a.Selected {
			require.True(t, hasOption(q, l), "%q is no option", l)
		}
		_, err = json.Marshal(a)
		require.NoError(t, err)
	})
}

// FuzzBatchFromFlags: any flag values either make a batch that names each
// question exactly once (D6) or fail BAD_ANSWER.
func FuzzBatchFromFlags(f *testing.F) {
	f.Add("db=1", "regions=eu,us", "notes")
	f.Add("db=custom:x", "regions=9", "")
	f.Add("notes=custom:", "db", "db")
	f.Add("=", "regions=", "regions")
	f.Fuzz(func(t *testing.T, a1, a2, skip string) {
		qs := []holdover.Question{single, multi, free}
		var skips []string
		if skip != "" {
			skips = []string{skip}
		}
		batch, err := BatchFromFlags(qs, []string{a1, a2}, skips)
		if err != nil {
			require.Equal(t, holdover.CodeBadAnswer, holdover.CodeOf(err), "%v", err)
			return
		}
		require.NoError(t, holdover.ValidateBatch(qs, batch))
	})
}

func hasOption(q holdover.Question, label string) bool {
	for _, o := range q.Options {
		if o.Label == label {
			return true
		}
	}
	return false
}
