package askuser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
)

// answersResult is the in-time result (M7): the batch as compact JSON,
// labels and custom text exactly as the user gave them.
func answersResult(answers []holdover.Answer) holdover.ToolResult {
	return holdover.ToolResult{Text: holdover.Batch{Answers: answers}.String()}
}

// pendingResult is the result of a wait that ended without an answer batch
// (M6). Its message is the model's only guidance on what pending means, so
// it says what happened, what it is not, and how a late answer will look.
func pendingResult(callID string) holdover.ToolResult {
	message := fmt.Sprintf("No answer batch arrived before the timeout. "+
		"The question is pending: this is not a skipped answer. "+
		"Continue with useful work that does not depend on the answer. "+
		"The user may still answer; the reply will arrive as a user message of kind %q with callId %q and the original questions. "+
		"Do not treat this as permission to do anything that needs the user's answer or approval.",
		events.ReplyKind, callID)
	// A struct of strings and a bool always encodes.
	data, _ := json.Marshal(holdover.Pending{Pending: true, CallID: callID, Message: message})
	return holdover.ToolResult{Text: string(data)}
}

// hints tell the model what to do next where the error's message only says
// what happened. DELEGATED_CALLER needs none: its message already tells the
// child to put the open question in its final result (M9).
var hints = map[holdover.Code]string{
	holdover.CodeNoProvider:     "Nobody can answer questions in this Session right now; continue without the answer where you can, and say what you need from the user in your reply.",
	holdover.CodeEmptyQuestions: fixArguments,
	holdover.CodeBadRequest:     fixArguments,
	holdover.CodeBadTimeout:     fixArguments,
	holdover.CodeBadIntent:      fixArguments,
}

const fixArguments = "Correct the arguments and call the tool again."

// failure renders err as a structured tool error. Once the caller's context
// is done the call was aborted (W5), whatever the service reported.
func failure(ctx context.Context, err error) holdover.ToolResult {
	wire := holdover.Wire(err)
	if ctx.Err() != nil {
		wire = &holdover.Error{Code: holdover.CodeAskAborted, Message: "the question was aborted because its call was cancelled"}
	}
	text := fmt.Sprintf("%s: %s", wire.Code, wire.Message)
	if hint := hints[wire.Code]; hint != "" {
		text = strings.TrimSuffix(text, ".") + ". " + hint
	}
	return holdover.ToolResult{Text: text, IsError: true, Code: wire.Code}
}
