package holdover

import (
	"encoding/json"
	"fmt"
)

// Option is one choice of a question. A label ending in "(Recommended)" is
// a suggestion shown pre-selected by Clients; it is passed through unchanged.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Question is one structured question of an ask_user_question call. Its ID
// is stable within the call and names it in the answer batch.
type Question struct {
	ID          string   `json:"id"`
	Question    string   `json:"question"`
	Header      string   `json:"header,omitempty"`
	Options     []Option `json:"options,omitempty"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
	// Detail is Markdown shown beside the question; plan review requires it.
	Detail string `json:"detail,omitempty"`
}

// Answer is the user's answer to one question. A skipped question is an
// Answer with empty Selected and no Custom text.
type Answer struct {
	ID       string   `json:"id"`
	Selected []string `json:"selected"`
	Custom   string   `json:"custom,omitempty"`
}

// MarshalJSON writes Selected as [] rather than null, so that a skipped
// answer reads the same to every consumer.
func (a Answer) MarshalJSON() ([]byte, error) {
	type plain Answer
	if a.Selected == nil {
		a.Selected = []string{}
	}
	return json.Marshal(plain(a))
}

// Skipped reports whether the user skipped the question.
func (a Answer) Skipped() bool { return len(a.Selected) == 0 && a.Custom == "" }

// Intent marks a question with a purpose the worker validates. The only kind
// is plan review (M8).
type Intent struct {
	Kind string `json:"kind"`
	// Approve is the option label that approves the plan.
	Approve string `json:"approve"`
}

// IntentPlanReview is the kind of a plan-review intent.
const IntentPlanReview = "plan-review"

// ValidateQuestions checks a call's questions: at least one (EMPTY_QUESTIONS),
// each with an id and text, ids unique within the call (BAD_REQUEST).
func ValidateQuestions(qs []Question) error {
	if len(qs) == 0 {
		return New(CodeEmptyQuestions, "at least one question is required")
	}
	seen := make(map[string]bool, len(qs))
	for i, q := range qs {
		switch {
		case q.ID == "":
			return Newf(CodeBadRequest, "question %d has no id", i+1)
		case q.Question == "":
			return Newf(CodeBadRequest, "question %q has no text", q.ID)
		case seen[q.ID]:
			return Newf(CodeBadRequest, "question id %q is used twice in one call; ids must be unique within a call", q.ID)
		}
		seen[q.ID] = true
	}
	return nil
}

// ValidateIntent checks a plan-review intent (M8): the approve label must be
// one of the question's options and the question must carry detail. Any
// other kind is BAD_INTENT.
func ValidateIntent(in *Intent, qs []Question) error {
	if in == nil {
		return nil
	}
	if in.Kind != IntentPlanReview {
		return Newf(CodeBadIntent, "unknown intent kind %q", in.Kind)
	}
	if len(qs) != 1 {
		return New(CodeBadIntent, "a plan review asks exactly one question")
	}
	q := qs[0]
	if q.Detail == "" {
		return New(CodeBadIntent, "a plan review question must carry the plan as detail")
	}
	for _, o := range q.Options {
		if o.Label == in.Approve {
			return nil
		}
	}
	return Newf(CodeBadIntent, "the approve label %q is not one of the question's options", in.Approve)
}

// ValidateBatch checks that answers name every question exactly once
// (D6): no missing, unknown or repeated id. An all-skipped batch is valid.
func ValidateBatch(qs []Question, answers []Answer) error {
	want := make(map[string]bool, len(qs))
	for _, q := range qs {
		want[q.ID] = true
	}
	seen := make(map[string]bool, len(answers))
	for _, a := range answers {
		switch {
		case !want[a.ID]:
			return Newf(CodeBadAnswer, "answer names %q, which is not a question of this call", a.ID)
		case seen[a.ID]:
			return Newf(CodeBadAnswer, "question %q is answered twice", a.ID)
		}
		seen[a.ID] = true
	}
	if len(seen) != len(want) {
		for _, q := range qs {
			if !seen[q.ID] {
				return Newf(CodeBadAnswer, "question %q has no answer; skip it with an empty selection instead", q.ID)
			}
		}
	}
	return nil
}

// Batch is the answer batch of one call, as the tool returns it in time (M7).
type Batch struct {
	Answers []Answer `json:"answers"`
}

// ParseBatch decodes an answer batch and checks its items have ids.
func ParseBatch(data []byte) (Batch, error) {
	var b Batch
	if err := json.Unmarshal(data, &b); err != nil {
		return Batch{}, Wrap(err, CodeBadAnswer, "answer batch is not valid JSON")
	}
	if b.Answers == nil {
		return Batch{}, New(CodeBadAnswer, "answer batch has no answers list")
	}
	for i, a := range b.Answers {
		if a.ID == "" {
			return Batch{}, Newf(CodeBadAnswer, "answer %d has no id", i+1)
		}
	}
	return b, nil
}

// MarshalJSON writes a nil Answers as [] rather than null: ParseBatch
// refuses a batch without an answers list, so Holdover never writes one.
func (b Batch) MarshalJSON() ([]byte, error) {
	type plain Batch
	if b.Answers == nil {
		b.Answers = []Answer{}
	}
	return json.Marshal(plain(b))
}

// String renders the batch as compact JSON.
func (b Batch) String() string {
	data, err := json.Marshal(b)
	if err != nil {
		return fmt.Sprintf("%+v", b.Answers)
	}
	return string(data)
}
