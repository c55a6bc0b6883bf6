package projection

import (
	"context"
	"fmt"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
)

// The reasons a timed wait names a call the fold does not track
// (WhyUntracked), besides ReasonInvalidArguments. They are reason labels
// of holdover_events_rejected_total too (type "askTimed") and stay stable.
const (
	// ReasonNoLog: the Session has no events at all. The service was used
	// without a Session log: the wait goes pending, though the question
	// cannot outlive it.
	ReasonNoLog Reason = "no_log"
	// ReasonNoCall: the Session has a log, and no ask_user_question
	// tool/call of that call id is in it.
	ReasonNoCall Reason = "no_call"
	// ReasonLegacyHeader: the tool/call was made under no request/header,
	// or one that declares ask_user_question without timeout (M1, D2).
	ReasonLegacyHeader Reason = "legacy_header"
	// ReasonCallEnded: the call was tracked, and a later event settled or
	// removed it (D3); asking again needs a new tool/call.
	ReasonCallEnded Reason = "call_ended"
)

// CodeTool is the tool whose programs call ask_user_question as
// sub-calls, recorded as tool/ptc-dispatch once they return (D4).
const CodeTool = "run_code"

// Untracked says why a Session's fold does not hold a call as active.
type Untracked struct {
	Reason Reason
	// Seq is the event at fault (the tool/call, or the header it was made
	// under), 0 when there is none.
	Seq uint64
	// Detail says what is wrong and what to record instead.
	Detail string
}

// Error is u as the error a timed wait ends with instead of pending:
// UNTRACKED_CALL.
func (u Untracked) Error() error {
	return holdover.Newf(holdover.CodeUntrackedCall, "%s (%s)", u.Detail, u.Reason)
}

// WhyUntracked folds log, a Session's whole log in order, and says why its
// View does not end with call callID active, when it does not and no later
// event would track it: a call with no tool/call while a run_code call is
// open may be its sub-call, which its tool/ptc-dispatch will track (D4).
// It is pure, like the fold whose rules it spells out.
func WhyUntracked(log []events.Event, callID string) (Untracked, bool) {
	v := New()
	var header struct {
		seq      uint64
		declares bool
	}
	var call struct {
		seq        uint64
		args       []byte
		timed      bool // under a timed header (a ptc-dispatch needs none)
		headerSeq  uint64
		headerDecl bool
	}
	openCode := map[string]bool{} // run_code calls without a result yet
	for _, e := range log {
		v.Apply(e)
		switch b := e.Body.(type) {
		case *events.RequestHeader:
			header.seq, header.declares = e.Seq, declaresAsk(b.Tools)
		case *events.ToolCall:
			if b.CallID == callID && b.Name == holdover.ToolName {
				call.seq, call.args, call.timed = e.Seq, b.Arguments, v.Timed
				call.headerSeq, call.headerDecl = header.seq, header.declares
			}
			if b.Name == CodeTool {
				openCode[b.CallID] = true
			}
		case *events.ToolResult:
			delete(openCode, b.CallID)
		case *events.PTCDispatch:
			if args, ok := askArguments(b); ok && b.CallID == callID {
				call.seq, call.args, call.timed = e.Seq, args, true
			}
		}
	}
	if _, active := v.Find(callID); active {
		return Untracked{}, false
	}
	switch {
	case call.seq == 0 && len(openCode) > 0:
		// A sub-call of a program still running: its tool/ptc-dispatch is
		// recorded when it returns, and tracks it then (D4).
		return Untracked{}, false
	case len(log) == 0:
		return Untracked{Reason: ReasonNoLog, Detail: "the Session has no events: the question cannot be answered after its wait; " +
			"record the request/header and the tool/call before askTimed"}, true
	case call.seq == 0:
		return Untracked{Reason: ReasonNoCall, Detail: fmt.Sprintf("the Session's log (last seq %d) records no %s tool/call with callId %q; "+
			"append the tool/call, and wait for its ack, before askTimed", v.LastSeq, holdover.ToolName, callID)}, true
	case !call.timed && call.headerSeq == 0:
		return Untracked{Reason: ReasonLegacyHeader, Seq: call.seq, Detail: fmt.Sprintf("the tool/call at seq %d follows no request/header; "+
			"record a header whose %s inputSchema has a timeout property before the call (D2)", call.seq, holdover.ToolName)}, true
	case !call.timed:
		what := "declares " + holdover.ToolName + " without a timeout property (the legacy schema)"
		if !call.headerDecl {
			what = "does not declare " + holdover.ToolName + " under inputSchema"
		}
		return Untracked{Reason: ReasonLegacyHeader, Seq: call.headerSeq, Detail: fmt.Sprintf("the request/header at seq %d, the latest before the tool/call at seq %d, %s, "+
			"so the Session's calls are not tracked as timed (M1, D2); declare the timed schema", call.headerSeq, call.seq, what)}, true
	}
	if _, err := CheckArguments(call.args); err != nil {
		return Untracked{Reason: ReasonInvalidArguments, Seq: call.seq, Detail: fmt.Sprintf("the tool/call at seq %d: %s", call.seq, holdover.Wire(err).Message)}, true
	}
	return Untracked{Reason: ReasonCallEnded, Seq: call.seq, Detail: fmt.Sprintf("call %q was tracked from its tool/call at seq %d, and a later event settled or ended it (D3); "+
		"record a new tool/call to ask again", callID, call.seq)}, true
}

// declaresAsk reports whether tools declare ask_user_question with an
// input schema, timed or not.
func declaresAsk(tools []events.ToolSchema) bool {
	for _, t := range tools {
		if t.Name == holdover.ToolName && present(t.InputSchema) {
			return true
		}
	}
	return false
}

// Untracked says whether call callID of Session sid is active in its View
// as of its last event now and, when it is not, why (WhyUntracked). A
// View this Store holds with the call active answers without a read: a
// tracked call stays active until its own tool result, which its runtime
// records after the ask this serves. Otherwise it costs one read, of the
// Session's last seq, when the Session has no log or this Store holds its
// View as of that seq; else the reads of CaughtUp, and a read of the
// whole log only when the call is not active.
func (s *Store) Untracked(ctx context.Context, sid, callID string) (Untracked, bool, error) {
	if seen, ok := s.seen.get(sid); ok {
		if _, active := seen.Find(callID); active {
			return Untracked{}, false, nil
		}
	}
	last, err := s.log.Last(ctx, sid)
	if err != nil {
		return Untracked{}, false, err
	}
	if last == 0 {
		u, _ := WhyUntracked(nil, callID)
		return u, true, nil
	}
	v, ok := s.seen.get(sid)
	if !ok || v.LastSeq != last {
		e, err := s.load(ctx, sid)
		if err != nil {
			return Untracked{}, false, err
		}
		if v = e.view; v.LastSeq < last {
			if _, err := s.catchUp(ctx, sid, &v); err != nil {
				return Untracked{}, false, err
			}
		}
	}
	if _, active := v.Find(callID); active {
		return Untracked{}, false, nil
	}
	log, err := s.read(ctx, sid, 0)
	if err != nil {
		return Untracked{}, false, err
	}
	u, untracked := WhyUntracked(log, callID)
	return u, untracked, nil
}
