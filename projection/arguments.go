package projection

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/schemas"
)

// ArgumentsSchema is the schema of an ask_user_question call's arguments
// as a tool/call records them.
const ArgumentsSchema = "tool/arguments.json"

// CheckArguments reads the arguments of an ask_user_question call the way
// the fold tracks it (M2–M4): they fit ArgumentsSchema, whose timeout is
// in seconds, -1 or 1..2147483, and their question ids are unique within
// the call, which no JSON Schema can say. Arguments that are not a valid
// ask are a BAD_REQUEST whose message names the field and says why, for
// the runtime author: the fold leaves such a call untracked, `holdover
// check` prints the message, and askTimed refuses a call with it.
func CheckArguments(raw json.RawMessage) (holdover.ToolArgs, error) {
	if err := checkTimeoutMember(raw); err != nil {
		return holdover.ToolArgs{}, err
	}
	problems, err := schemas.Validate(ArgumentsSchema, raw)
	if err != nil {
		return holdover.ToolArgs{}, err
	}
	if len(problems) > 0 {
		return holdover.ToolArgs{}, holdover.Newf(holdover.CodeBadRequest, "the arguments do not fit %s: %s", ArgumentsSchema, joinProblems(problems))
	}
	var args holdover.ToolArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return holdover.ToolArgs{}, holdover.Wrap(err, holdover.CodeBadRequest, "the arguments are not an ask")
	}
	if len(args.Questions) == 0 {
		return holdover.ToolArgs{}, holdover.New(holdover.CodeEmptyQuestions, "questions is empty: an ask has at least one question (M4)")
	}
	if err := holdover.ValidateQuestions(args.Questions); err != nil {
		return holdover.ToolArgs{}, err
	}
	return args, nil
}

// timeoutRule is what a recorded timeout must be, said the way a runtime
// that converted it to milliseconds, or quoted it, needs to read it.
const timeoutRule = "timeout is in seconds, -1 (until answered) or 1–2147483"

// checkTimeoutMember says what is wrong with the arguments' timeout, if
// they are an object with one that is not -1 or 1..2147483 whole seconds.
// The schema refuses the same values, in words that do not say seconds.
func checkTimeoutMember(raw json.RawMessage) error {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return nil // the schema says what is wrong
	}
	t, ok := members["timeout"]
	if !ok || string(bytes.TrimSpace(t)) == "null" {
		return nil // the default; some providers send null for an optional parameter
	}
	var seconds int64
	d := json.NewDecoder(bytes.NewReader(t))
	if bytes.HasPrefix(bytes.TrimSpace(t), []byte(`"`)) || d.Decode(&seconds) != nil || !holdover.ValidTimeoutSeconds(seconds) {
		return holdover.Newf(holdover.CodeBadTimeout, "%s; got %s", timeoutRule, t)
	}
	return nil
}

func joinProblems(ps []schemas.Problem) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "; ")
}
