package projection

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
)

// Reason says why the fold could not use an event. The values are the
// reason label of holdover_events_rejected_total and stay stable.
type Reason string

const (
	// ReasonUndecodable: the message is no Session event: not JSON, no
	// type, or a time that does not parse.
	ReasonUndecodable Reason = "undecodable"
	// ReasonInvalidBody: a type this version reads, with a body that breaks
	// its schema (schemas/events): a required field missing or empty, a
	// value of the wrong type, a message without a source.
	ReasonInvalidBody Reason = "invalid_body"
	// ReasonToolSchemaKey: a request/header declares ask_user_question with
	// its input schema under another key than inputSchema (parameters,
	// input_schema, function.parameters), so the Session's calls are not
	// tracked as timed (D2).
	ReasonToolSchemaKey Reason = "tool_schema_key"
	// ReasonInvalidArguments: an ask_user_question tool/call (or a pending
	// tool/ptc-dispatch) whose arguments are not a valid ask
	// (CheckArguments), so the call is not tracked (M2–M4).
	ReasonInvalidArguments Reason = "invalid_arguments"
)

// unknownType is the type label of an event whose type is not one this
// version reads: the label takes only known values, whatever a writer sends.
const unknownType = "unknown"

// Rejection is an event the fold passed over, or read differently from
// what its writer evidently meant.
type Rejection struct {
	Seq uint64
	// Type is the event type when this version reads it, else "unknown".
	Type   string
	Reason Reason
	// Detail says what is wrong, for the runtime author who wrote it.
	Detail string
}

func (r Rejection) String() string {
	return fmt.Sprintf("seq %d %s (%s): %s", r.Seq, r.Type, r.Reason, r.Detail)
}

// Reject reports whether the fold cannot use event e, which events.Decode
// returned with decodeErr, and why. It is pure like Apply and changes
// nothing Apply does: a rejected event still only advances LastSeq (and a
// header whose question tool is misdeclared still folds as not timed).
// Reporting it is the caller's business: the projection worker counts and
// logs each once, `holdover inspect` and `holdover check` list them.
func Reject(e events.Event, decodeErr error) (Rejection, bool) {
	if decodeErr != nil {
		if _, known := events.NewBody(e.Type); !known {
			return Rejection{Seq: e.Seq, Type: unknownType, Reason: ReasonUndecodable, Detail: holdover.Wire(decodeErr).Message}, true
		}
		r := Rejection{Seq: e.Seq, Type: string(e.Type), Reason: ReasonInvalidBody, Detail: holdover.Wire(decodeErr).Message}
		if e.Type == events.TypeRequestHeader {
			if detail, ok := misdeclaredAsk(e.Data); ok {
				r.Reason, r.Detail = ReasonToolSchemaKey, detail
			}
		}
		return r, true
	}
	if args, ok := askArguments(e.Body); ok {
		if _, err := CheckArguments(args); err != nil {
			return Rejection{Seq: e.Seq, Type: string(e.Type), Reason: ReasonInvalidArguments, Detail: holdover.Wire(err).Message + "; the call is not tracked, so it cannot be answered late"}, true
		}
		return Rejection{}, false
	}
	h, ok := e.Body.(*events.RequestHeader)
	if !ok || offersTimedTool(h.Tools) || !declaresAskWithoutSchema(h.Tools) {
		return Rejection{}, false
	}
	if detail, ok := misdeclaredAsk(e.Data); ok {
		return Rejection{Seq: e.Seq, Type: string(e.Type), Reason: ReasonToolSchemaKey, Detail: detail}, true
	}
	return Rejection{}, false
}

// askArguments returns the arguments of a body the fold would track as an
// ask_user_question call if they were a valid ask: a tool/call of the
// tool, or a tool/ptc-dispatch of it that returned pending (D3, D4).
func askArguments(b events.Body) (json.RawMessage, bool) {
	switch b := b.(type) {
	case *events.ToolCall:
		return b.Arguments, b.Name == holdover.ToolName
	case *events.PTCDispatch:
		if b.Name != holdover.ToolName || failed(b.IsError, b.Error) {
			return nil, false
		}
		_, pending := holdover.ParsePending(events.JoinText(b.Content))
		return b.Arguments, pending
	}
	return nil, false
}

// declaresAskWithoutSchema reports whether tools name ask_user_question
// with no inputSchema: the one case in which a header that decoded may
// carry the schema under another key. Legacy declarations have an
// inputSchema without timeout and are fine.
func declaresAskWithoutSchema(tools []events.ToolSchema) bool {
	for _, t := range tools {
		if t.Name == holdover.ToolName && (len(t.InputSchema) == 0 || string(t.InputSchema) == "null") {
			return true
		}
	}
	return false
}

// declaredTool is a tool declaration with the keys other APIs use for the
// input schema, to say which one a header used instead of inputSchema.
type declaredTool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Parameters  json.RawMessage `json:"parameters"`
	SnakeSchema json.RawMessage `json:"input_schema"`
	Function    *struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// misdeclaredAsk reads a request/header body as recorded and says how its
// ask_user_question declaration misplaces the input schema, if it does:
// {name, parameters} (OpenAI's function fields), {name, input_schema}
// (Anthropic's) or {type:"function", function:{name, parameters}}
// (OpenAI's Chat Completions tools).
func misdeclaredAsk(data json.RawMessage) (string, bool) {
	var h struct {
		Tools []declaredTool `json:"tools"`
	}
	if json.Unmarshal(data, &h) != nil {
		return "", false
	}
	for i, t := range h.Tools {
		if present(t.InputSchema) {
			continue
		}
		var key string
		switch {
		case t.Name == holdover.ToolName && present(t.Parameters):
			key = "parameters"
		case t.Name == holdover.ToolName && present(t.SnakeSchema):
			key = "input_schema"
		case t.Function != nil && t.Function.Name == holdover.ToolName:
			key = "function.parameters"
		default:
			continue
		}
		return fmt.Sprintf("tool %d declares %s with its input schema under %q; Holdover reads only {name, description, inputSchema}, so this Session's questions are not tracked as timed (D2)",
			i+1, holdover.ToolName, key), true
	}
	return "", false
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// rejectionReport counts and logs the rejected events a worker has
// acknowledged: once per event, whichever worker folded it.
type rejectionReport struct {
	log     *slog.Logger
	counter *prometheus.CounterVec
}

func (r rejectionReport) report(sid string, rej Rejection) {
	r.counter.WithLabelValues(rej.Type, string(rej.Reason)).Inc()
	r.log.Warn("rejected a Session event; `holdover check` lists every problem of the Session's log",
		"session", sid, "seq", rej.Seq, "type", rej.Type, "reason", rej.Reason, "detail", rej.Detail)
}
