package events

import (
	"encoding/json"

	"github.com/holdover-dev/holdover"
)

// ReplyKind marks the text of a late answer (D6).
const ReplyKind = "answer_to_pending_question"

// Reply is the recorded text of a late answer: what the model reads as a
// user message, naming the call and repeating its questions.
type Reply struct {
	Kind      string              `json:"kind"`
	Tool      string              `json:"tool"`
	CallID    string              `json:"callId"`
	Questions []holdover.Question `json:"questions"`
	Answers   []holdover.Answer   `json:"answers"`
}

// NewReply builds the user message that carries a late answer to callID.
func NewReply(messageID, callID string, questions []holdover.Question, answers []holdover.Answer) (Message, error) {
	text, err := json.Marshal(Reply{Kind: ReplyKind, Tool: holdover.ToolName, CallID: callID, Questions: questions, Answers: answers})
	if err != nil {
		return Message{}, holdover.Wrap(err, holdover.CodeBadRequest, "encode reply")
	}
	return Message{ID: messageID, Role: "user", Content: Text(string(text)), Source: QuestionReply(callID)}, nil
}

// ParseReply reads the recorded text of a late answer. The source, not
// this text, identifies a reply (G1); an unreadable text is an error the
// reader handles, never a reason to treat the message as something else.
func ParseReply(text string) (Reply, error) {
	var r Reply
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return Reply{}, holdover.Wrap(err, holdover.CodeBadAnswer, "reply text is not JSON")
	}
	if r.Kind != ReplyKind {
		return Reply{}, holdover.Newf(holdover.CodeBadAnswer, "reply text has kind %q, want %q", r.Kind, ReplyKind)
	}
	if r.Answers == nil {
		return Reply{}, holdover.New(holdover.CodeBadAnswer, "reply text has no answers")
	}
	return r, nil
}
