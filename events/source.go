package events

import (
	"github.com/holdover-dev/holdover"
)

// Source says where a message came from. Kind selects which other fields
// are meaningful; the registry below lists the kinds this version knows.
type Source struct {
	Kind    string `json:"kind"`
	CallID  string `json:"callId,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// The message-source kinds. Adding one is a persisted-shape change that the
// catalog must acknowledge (D10).
const (
	SourceUser              = "user"
	SourceUserQuestionReply = "user-question-reply"
)

// OutcomeAnswered is the only outcome of a user-question-reply source.
const OutcomeAnswered = "answered"

// sourceKinds is the registry of message-source kinds and the check each
// kind's fields must pass.
var sourceKinds = map[string]func(Source) error{
	SourceUser: func(Source) error { return nil },
	SourceUserQuestionReply: func(s Source) error {
		if s.CallID == "" {
			return holdover.New(holdover.CodeBadRequest, "a user-question-reply source needs a callId")
		}
		if s.Outcome != OutcomeAnswered {
			return holdover.Newf(holdover.CodeBadRequest, "a user-question-reply source has outcome %q, want %q", s.Outcome, OutcomeAnswered)
		}
		return nil
	},
}

// SourceKinds lists the registered kinds, for the persistence catalog.
func SourceKinds() []string {
	out := make([]string, 0, len(sourceKinds))
	for k := range sourceKinds {
		out = append(out, k)
	}
	return out
}

// Validate checks that the kind is registered and its fields fit it.
func (s Source) Validate() error {
	if s.Kind == "" {
		return holdover.New(holdover.CodeBadRequest, `message has no source: every message names where it came from, {"kind":"user"} for one a person typed`)
	}
	check, ok := sourceKinds[s.Kind]
	if !ok {
		return holdover.Newf(holdover.CodeBadRequest, "unknown message source kind %q", s.Kind)
	}
	return check(s)
}

// QuestionReply returns the source of a late answer to callID (D6).
func QuestionReply(callID string) Source {
	return Source{Kind: SourceUserQuestionReply, CallID: callID, Outcome: OutcomeAnswered}
}

// IsQuestionReply reports whether s identifies a late answer.
func (s Source) IsQuestionReply() bool {
	return s.Kind == SourceUserQuestionReply && s.Outcome == OutcomeAnswered && s.CallID != ""
}
