package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/projection"
)

// The Claude Code hook events `holdover hook` answers.
const (
	EventSessionStart     = "SessionStart"
	EventUserPromptSubmit = "UserPromptSubmit"
	EventPostToolUse      = "PostToolUse"
	EventStop             = "Stop"
)

// HookInput is the part of a Claude Code hook's stdin JSON the hook reads:
// the fields every event has (session_id, hook_event_name) and the ones
// it passes over are kept as they came.
type HookInput struct {
	SessionID      string `json:"session_id"`
	HookEventName  string `json:"hook_event_name"`
	Source         string `json:"source,omitempty"`
	StopHookActive bool   `json:"stop_hook_active,omitempty"`
}

// maxHookInput bounds what the hook reads from stdin: a PostToolUse input
// carries the tool's whole response.
const maxHookInput = 16 << 20

// ParseHookInput reads and checks a hook input. Anything but one JSON
// object naming the event and the session is BAD_REQUEST.
func ParseHookInput(r io.Reader) (HookInput, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxHookInput+1))
	if err != nil {
		return HookInput{}, holdover.Wrap(err, holdover.CodeBadRequest, "read the hook input")
	}
	if len(data) > maxHookInput {
		return HookInput{}, holdover.Newf(holdover.CodeBadRequest, "the hook input is over %d bytes", maxHookInput)
	}
	var in HookInput
	if err := json.Unmarshal(bytes.TrimSpace(data), &in); err != nil {
		return HookInput{}, holdover.Wrap(err, holdover.CodeBadRequest, "the hook input is not a JSON object")
	}
	switch {
	case in.HookEventName == "":
		return HookInput{}, holdover.New(holdover.CodeBadRequest, "the hook input has no hook_event_name")
	case in.SessionID == "":
		return HookInput{}, holdover.New(holdover.CodeBadRequest, "the hook input has no session_id")
	}
	return in, nil
}

// Handles reports whether the hook hands anything over on event.
func Handles(event string) bool {
	switch event {
	case EventSessionStart, EventUserPromptSubmit, EventPostToolUse, EventStop:
		return true
	}
	return false
}

// HookOutput is the JSON a hook prints (Claude Code's documented output):
// additionalContext under hookSpecificOutput, or decision "block" with the
// reason on Stop.
type HookOutput struct {
	Decision           string              `json:"decision,omitempty"`
	Reason             string              `json:"reason,omitempty"`
	HookSpecificOutput *HookSpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// HookSpecificOutput is the event's own output.
type HookSpecificOutput struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext"`
}

// lateIntro says what the handed-over text is.
const lateIntro = "Holdover: the user answered a question you asked earlier that had returned pending. " +
	"This is their answer (answer_to_pending_question); act on it now:"

// Render is what the hook prints for event, with the deliveries claimed
// for it and, on SessionStart, the questions still open. Nothing to say is
// nil: the hook prints nothing.
func Render(event string, ds []Delivery, open []projection.Call) *HookOutput {
	var parts []string
	if len(ds) > 0 {
		parts = append(parts, lateIntro)
		for _, d := range ds {
			parts = append(parts, d.Text())
		}
	}
	if event == EventSessionStart {
		// A call whose answer is handed over here waits no more.
		open = slices.DeleteFunc(slices.Clone(open), func(c projection.Call) bool {
			return slices.ContainsFunc(ds, func(d Delivery) bool { return d.Message.Source.CallID == c.CallID })
		})
		if len(open) > 0 {
			parts = append(parts, openText(open))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	text := strings.Join(parts, "\n")
	if event == EventStop {
		if len(ds) == 0 {
			return nil
		}
		return &HookOutput{Decision: "block", Reason: text}
	}
	return &HookOutput{HookSpecificOutput: &HookSpecificOutput{HookEventName: event, AdditionalContext: text}}
}

// openText lists the questions a Session still waits on.
func openText(open []projection.Call) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Holdover: %d of your earlier ask_user_question calls still wait for the user's answer; "+
		"an answer will reach you as a user message of kind \"answer_to_pending_question\". Do not assume any of them answered:", len(open))
	for _, c := range open {
		qs := make([]string, len(c.Questions))
		for i, q := range c.Questions {
			qs[i] = fmt.Sprintf("%q", q.Question)
		}
		fmt.Fprintf(&b, "\n- call %s (%s): %s", c.CallID, c.Status, strings.Join(qs, "; "))
	}
	return b.String()
}

// Hook is one hook run's work on a Session: claim what waits, render it,
// hand it to print, and admit it only once print has it. print returns an
// error when the output did not get out; then nothing is admitted and the
// claim runs out for a later hook.
func Hook(ctx context.Context, l *Log, in HookInput, open func(context.Context) ([]projection.Call, error), print func(*HookOutput) error) error {
	ds, err := l.Claim(ctx)
	if err != nil {
		return err
	}
	var calls []projection.Call
	if in.HookEventName == EventSessionStart && open != nil {
		if calls, err = open(ctx); err != nil {
			return err
		}
	}
	out := Render(in.HookEventName, ds, calls)
	if err := print(out); err != nil {
		return err
	}
	admitted, err := l.Admit(ctx, ds)
	if err != nil {
		return err
	}
	if len(admitted) != len(ds) {
		return holdover.Newf(holdover.CodeConflict, "%d of the %d replies this hook claimed were claimed again by another before it admitted them", len(ds)-len(admitted), len(ds))
	}
	return nil
}
