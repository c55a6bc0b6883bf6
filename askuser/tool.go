package askuser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
)

// The tool modes (M1, M2).
const (
	// ModeLegacy registers the blocking schema, without timeout, and asks
	// with an unkeyed blocking request that is never tracked.
	ModeLegacy = "legacy"
	// ModeTimed adds the timeout parameter and keys every request by its
	// tool call id, so the question outlives the call.
	ModeTimed = "timed"
)

// Timeouts, in seconds (M2, M3).
const (
	// DefaultTimeout is the timed wait when neither the model nor the
	// configuration names one.
	DefaultTimeout = 120
)

// Asker is the question service as the tool uses it: a blocking ask and a
// timed ask. The service owns the waits, the deadlines and the durable
// question; the tool only chooses which call to make.
//
// The model reads an error's code and message as the tool result, so the
// message must be fit for it: DELEGATED_CALLER, for one, tells the child
// agent to put the open question in its final result (M9).
type Asker interface {
	// Ask waits until the questions are answered. A request with a CallID
	// is keyed and tracked; one without is a legacy request.
	Ask(ctx context.Context, req holdover.AskRequest) ([]holdover.Answer, error)
	// AskTimed waits at most req.TimeoutMs and reports pending when no
	// answer batch arrived in time.
	AskTimed(ctx context.Context, req holdover.AskTimedRequest) (holdover.Outcome, error)
}

// Config is the tool's registration configuration.
type Config struct {
	// Mode is ModeLegacy (the default when empty) or ModeTimed.
	Mode string
	// DefaultTimeout is the timed wait in seconds when the model omits
	// timeout: holdover.BlockingTimeout or 1..holdover.MaxTimeoutSeconds, 0 meaning DefaultTimeout.
	DefaultTimeout int64
}

// Call is one model call of the tool, as the agent runtime hands it over.
type Call struct {
	Session string
	// CallID is the model's tool call id; timed calls are keyed by it.
	CallID string
	// Agent is the runtime instance that asks; timed calls require one.
	Agent     *holdover.AgentRef
	Arguments json.RawMessage
}

// Tool is a registered ask_user_question tool. It is safe for concurrent
// calls: after New it holds only immutable configuration.
type Tool struct {
	svc            Asker
	timed          bool
	defaultTimeout int64
	description    string
	inputSchema    json.RawMessage
}

// New registers the tool. It rejects an unknown mode and an invalid default
// timeout now (M2), so that a misconfiguration fails at startup rather than
// on the model's first question.
func New(cfg Config, svc Asker) (*Tool, error) {
	if svc == nil {
		return nil, holdover.New(holdover.CodeBadRequest, "ask_user_question needs a question service")
	}
	t := &Tool{svc: svc, defaultTimeout: cfg.DefaultTimeout}
	switch cfg.Mode {
	case "", ModeLegacy:
	case ModeTimed:
		t.timed = true
	default:
		return nil, holdover.Newf(holdover.CodeBadRequest, "unknown ask_user_question mode %q; use %q or %q", cfg.Mode, ModeLegacy, ModeTimed)
	}
	if t.defaultTimeout == 0 {
		t.defaultTimeout = DefaultTimeout
	}
	if !holdover.ValidTimeoutSeconds(t.defaultTimeout) {
		return nil, holdover.Newf(holdover.CodeBadTimeout, "the configured default %s (got %d)", timeoutRule, cfg.DefaultTimeout)
	}
	var err error
	if t.description, t.inputSchema, err = toolSchema(t.timed, t.defaultTimeout); err != nil {
		return nil, err
	}
	return t, nil
}

// Schema is the tool as the model is offered it and as request/header
// records it.
func (t *Tool) Schema() events.ToolSchema {
	return events.ToolSchema{Name: holdover.ToolName, Description: t.description, InputSchema: slices.Clone(t.inputSchema)}
}

// Call runs one model call: it validates the arguments, makes one service
// call and renders its outcome. Every failure comes back as a structured
// tool error the model can read; Call itself never fails.
func (t *Tool) Call(ctx context.Context, call Call) holdover.ToolResult {
	answers, pending, err := t.ask(ctx, call)
	switch {
	case err != nil:
		return failure(ctx, err)
	case pending:
		return pendingResult(call.CallID)
	default:
		return answersResult(answers)
	}
}

// ask validates the call and selects the service call (M1, M3, M4, M8).
func (t *Tool) ask(ctx context.Context, call Call) (answers []holdover.Answer, pending bool, err error) {
	args, timeout, err := t.parse(call.Arguments)
	if err != nil {
		return nil, false, err
	}
	if err := holdover.ValidateQuestions(args.Questions); err != nil {
		return nil, false, err
	}
	if err := holdover.ValidateIntent(args.Intent, args.Questions); err != nil {
		return nil, false, err
	}
	// Plan review always blocks (M8); only an explicit wait contradicts it.
	if args.Intent != nil && timeout != nil && *timeout != holdover.BlockingTimeout {
		return nil, false, holdover.New(holdover.CodeBadIntent, "a plan review waits until the user answers; omit timeout or pass -1")
	}
	if t.timed {
		if call.Agent == nil {
			return nil, false, holdover.New(holdover.CodeCallerNotLive, "timed questions require a live agent")
		}
		if call.CallID == "" {
			return nil, false, holdover.New(holdover.CodeBadRequest, "timed questions require the tool call id")
		}
	}
	// A Turn that is already over must not put a question in front of the user.
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}

	ask := holdover.AskRequest{Session: call.Session, Agent: call.Agent, Questions: args.Questions, Intent: args.Intent}
	if !t.timed {
		answers, err = t.svc.Ask(ctx, ask)
		return answers, false, err
	}
	seconds := t.defaultTimeout
	if timeout != nil {
		seconds = *timeout
	}
	if seconds == holdover.BlockingTimeout || args.Intent != nil {
		ask.CallID = call.CallID
		answers, err = t.svc.Ask(ctx, ask)
		return answers, false, err
	}
	out, err := t.svc.AskTimed(ctx, holdover.AskTimedRequest{
		Session:   call.Session,
		CallID:    call.CallID,
		Agent:     call.Agent,
		Questions: args.Questions,
		TimeoutMs: seconds * 1000,
	})
	return out.Answers, out.Pending, err
}

// timeoutRule is the one sentence every timeout rejection carries.
var timeoutRule = fmt.Sprintf("timeout must be -1 or a positive integer up to %d seconds", holdover.MaxTimeoutSeconds)

// parse decodes the arguments strictly: one JSON object, no unknown fields,
// nothing after it. It returns the timeout the model passed, nil when it
// omitted it (or sent null, as some providers do for optional parameters).
func (t *Tool) parse(raw json.RawMessage) (holdover.ToolArgs, *int64, error) {
	// Timeout is decoded apart from the other arguments so that a
	// malformed one (1.5, "60") gets the timeout rule, not a decoder message.
	var in struct {
		holdover.ToolArgs
		Timeout json.RawMessage `json:"timeout"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return holdover.ToolArgs{}, nil, badArguments(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return holdover.ToolArgs{}, nil, holdover.New(holdover.CodeBadRequest, "the arguments must be one JSON object with nothing after it")
	}
	if len(in.Timeout) == 0 || bytes.Equal(in.Timeout, []byte("null")) {
		return in.ToolArgs, nil, nil
	}
	if !t.timed {
		return holdover.ToolArgs{}, nil, holdover.New(holdover.CodeBadTimeout, "this ask_user_question takes no timeout: it waits until the user answers")
	}
	var seconds int64
	if json.Unmarshal(in.Timeout, &seconds) != nil || !holdover.ValidTimeoutSeconds(seconds) {
		return holdover.ToolArgs{}, nil, holdover.New(holdover.CodeBadTimeout, timeoutRule)
	}
	return in.ToolArgs, &seconds, nil
}

// badArguments says what is wrong with undecodable arguments in the
// schema's terms (field paths and JSON types), not in Go's.
func badArguments(err error) error {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return holdover.Newf(holdover.CodeBadRequest, "the arguments are not a valid %s input: %s", holdover.ToolName, strings.TrimPrefix(err.Error(), "json: "))
	}
	field := strings.TrimPrefix(typeErr.Field, "ToolArgs.")
	if field == "" {
		field = "the arguments"
	}
	return holdover.Newf(holdover.CodeBadRequest, "%s must be %s, not %s", field, jsonType(typeErr.Type), typeErr.Value)
}

// jsonType names the JSON type that decodes into t.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}
