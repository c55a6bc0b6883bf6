package runtime

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/runtime/model"
)

// InterruptedText is the result text of a tool call that a resumed agent
// found recorded without a result (D3): the call may or may not have run.
const InterruptedText = "The tool call was interrupted after it was recorded."

// Agent is one agent of a Session: a live root, or a child owned by one.
// It is the Session log's only writer while it runs, and everything it
// knows is folded from the events it reads and appends.
type Agent struct {
	rt    *Runtime
	sid   string
	ref   holdover.AgentRef
	child bool
	model model.Model
	tools *toolset
	log   *slog.Logger

	// mu orders every append and every read of st: the step loop, the
	// inbox reader and Discard all record through it.
	mu   sync.Mutex
	last uint64 // Session seq of the log's last event
	st   *state
	// wake tells the idle loop that the queue has new input.
	wake chan struct{}
}

func (rt *Runtime) newAgent(sid string, ref holdover.AgentRef, m model.Model, tools *toolset, child bool) *Agent {
	return &Agent{
		rt: rt, sid: sid, ref: ref, child: child, model: m, tools: tools,
		log:  rt.log.With("session", sid, "epoch", ref.Epoch),
		st:   newState(),
		wake: make(chan struct{}, 1),
	}
}

// Session is the agent's Session id.
func (a *Agent) Session() string { return a.sid }

// Ref names the agent as the question service sees it.
func (a *Agent) Ref() holdover.AgentRef { return a.ref }

// record appends body as the event after the log's last one and folds it
// into the state. The caller holds a.mu. Once ctx has ended nothing is
// recorded, so a stopping agent leaves its running calls without results
// for the resume repair to settle, exactly as a crash would.
func (a *Agent) record(ctx context.Context, body events.Body) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	e := events.New(a.rt.clock.Now(), body)
	seq, err := a.rt.sessions.Append(ctx, a.sid, a.last, e)
	if err != nil {
		return err
	}
	e.Seq, a.last = seq, seq
	a.st.apply(e)
	return nil
}

// load rebuilds the state from the Session log and repairs it: each tool
// call recorded without a result gets the TOOL_OUTCOME_UNKNOWN result, so
// a timed question interrupted by a crash turns continued and stays
// answerable (D3). A writer that appends meanwhile makes load start over.
func (a *Agent) load(ctx context.Context) error {
	var err error
	for range 5 {
		if err = a.loadOnce(ctx); !holdover.HasCode(err, holdover.CodeConflict) {
			return err
		}
	}
	return err
}

func (a *Agent) loadOnce(ctx context.Context) error {
	evts, bad, err := a.rt.sessions.Read(ctx, a.sid, 0)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last = 0
	for _, e := range evts {
		a.last = max(a.last, e.Seq)
	}
	for _, b := range bad {
		a.last = max(a.last, b.Seq)
		a.log.Warn("passing over a Session event that does not decode", "seq", b.Seq, "err", b.Err)
	}
	a.st = rebuild(evts)
	for _, c := range slices.Clone(a.st.open) {
		if err := a.record(ctx, Interrupted(c)); err != nil {
			return err
		}
		a.log.Info("repaired an interrupted tool call", "call", c.CallID, "tool", c.Name)
	}
	return nil
}

// Interrupted is the result a resumed runtime records for tool call c,
// found recorded without a result: TOOL_OUTCOME_UNKNOWN, which turns an
// interrupted timed question continued, so it stays answerable (D3). Every
// runtime that resumes a Session from its log repairs it this way.
func Interrupted(c events.ToolCall) *events.ToolResult {
	return ResultEvent(c.Turn, c.CallID, c.Name, holdover.ToolResult{Text: InterruptedText, IsError: true, Code: holdover.CodeToolOutcomeUnknown})
}

// ResultEvent is how every runtime records result r of tool call callID:
// its text as the one content part, and a failure's code under error.
func ResultEvent(turn, callID, name string, r holdover.ToolResult) *events.ToolResult {
	parts, terr := content(r)
	return &events.ToolResult{Turn: turn, CallID: callID, Name: name, Content: parts, IsError: r.IsError, Error: terr}
}

// loop runs Turns while there is work: an open Turn, or queued input that
// starts one. It returns when ctx ends or an append fails.
func (a *Agent) loop(ctx context.Context) error {
	for {
		a.mu.Lock()
		idle := a.st.turn == "" && len(a.st.queue) == 0
		var err error
		if !idle && a.st.turn == "" {
			err = a.record(ctx, &events.TurnStart{Turn: newID("turn")})
		}
		a.mu.Unlock()
		switch {
		case err != nil:
			return err
		case idle:
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-a.wake:
			}
			continue
		}
		if err := a.runTurn(ctx); err != nil {
			return err
		}
	}
}

// runTurn runs steps until the open Turn ends: when the model answers
// without tool calls and no input waits, or at the step limit.
func (a *Agent) runTurn(ctx context.Context) error {
	for {
		a.mu.Lock()
		var (
			done bool
			err  error
		)
		switch {
		case a.st.turn == "":
			done = true
		case !a.st.needsModel() && len(a.st.queue) == 0:
			err, done = a.endTurn(ctx, "done"), true
		case a.st.step >= a.rt.cfg.MaxSteps:
			err, done = a.endTurn(ctx, fmt.Sprintf("step limit of %d reached", a.rt.cfg.MaxSteps)), true
		}
		a.mu.Unlock()
		if done || err != nil {
			return err
		}
		if err := a.step(ctx); err != nil {
			return err
		}
	}
}

// step is one model request and the tool calls it makes. Queued input is
// admitted at the step's start, the step boundary: a tool still running
// in the previous step has finished by then.
func (a *Agent) step(ctx context.Context) error {
	if !a.child {
		// A stale instance must not start another model request (M9).
		if err := a.rt.roots.Check(ctx, a.sid, a.ref); err != nil {
			return err
		}
	}
	a.mu.Lock()
	turn, n := a.st.turn, a.st.step+1
	err := a.admitQueued(ctx)
	req := model.Request{System: a.rt.cfg.System, Tools: a.tools.schemas()}
	if err == nil {
		req.Messages = slices.Clone(a.st.history)
		err = a.record(ctx, &events.RequestHeader{Turn: turn, Model: a.model.Name(), Tools: req.Tools})
	}
	a.mu.Unlock()
	if err != nil {
		return err
	}

	resp, err := a.model.Complete(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		a.log.Warn("the model failed; ending the Turn", "turn", turn, "err", err)
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.endTurn(ctx, "model failed: "+err.Error())
	}
	if resp.Text != "" {
		if err := a.locked(ctx, &events.AssistantMessage{Turn: turn, ID: newID("msg"), Content: events.Text(resp.Text)}); err != nil {
			return err
		}
	}
	for _, tc := range resp.ToolCalls {
		if err := a.runCall(ctx, turn, tc); err != nil {
			return err
		}
	}
	return a.locked(ctx, &events.StepEnd{Turn: turn, Step: n})
}

// runCall records a tool call, runs it and records its result.
func (a *Agent) runCall(ctx context.Context, turn string, tc model.ToolCall) error {
	if tc.ID == "" {
		tc.ID = newID("call")
	}
	if !json.Valid(tc.Arguments) {
		tc.Arguments, _ = json.Marshal(string(tc.Arguments)) // a string always encodes
	}
	if err := a.locked(ctx, &events.ToolCall{Turn: turn, CallID: tc.ID, Name: tc.Name, Arguments: tc.Arguments}); err != nil {
		return err
	}
	c := Call{Session: a.sid, Turn: turn, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments, Agent: &a.ref}
	c.Runner = &callRunner{agent: a, call: c}
	return a.locked(ctx, ResultEvent(turn, tc.ID, tc.Name, a.tools.call(ctx, c)))
}

// locked records body under a.mu.
func (a *Agent) locked(ctx context.Context, body events.Body) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.record(ctx, body)
}

// admitQueued claims each queued message and admits it as a user/message
// with the same id and source, in splice order (D8). The caller holds a.mu.
// A message restored from the log is claimed again, which re-creates its
// reply reservation.
func (a *Agent) admitQueued(ctx context.Context) error {
	for len(a.st.queue) > 0 {
		it := a.st.queue[0]
		if err := a.record(ctx, &events.InboxClaimed{Turn: a.st.turn, MessageID: it.msg.ID}); err != nil {
			return err
		}
		if err := a.record(ctx, &events.UserMessage{Turn: a.st.turn, Message: it.msg}); err != nil {
			return err
		}
	}
	return nil
}

// endTurn discards what the Turn did not admit and closes it. A discard
// releases the reply's reservation, so the user can answer again (D8). The
// caller holds a.mu.
func (a *Agent) endTurn(ctx context.Context, reason string) error {
	for len(a.st.queue) > 0 {
		if err := a.record(ctx, &events.InboxDiscarded{Turn: a.st.turn, MessageID: a.st.queue[0].msg.ID, Reason: "the Turn ended before admitting it"}); err != nil {
			return err
		}
	}
	return a.record(ctx, &events.TurnEnd{Turn: a.st.turn, Reason: reason})
}

// splice puts a message read from the inbox into the next-step queue and
// records agent/inbox/spliced with the message, so a restarted agent can
// restore it. A message the log already holds is passed over: the inbox is
// read again from the last spliced sequence after every restart.
func (a *Agent) splice(ctx context.Context, q inbox.Queued) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.spliceLocked(ctx, q)
}

// spliceLocked is splice with a.mu held.
func (a *Agent) spliceLocked(ctx context.Context, q inbox.Queued) error {
	if _, seen := a.st.inbox[q.Message.ID]; seen || q.Seq <= a.st.inboxSeq {
		return nil
	}
	if err := a.record(ctx, &events.InboxSpliced{Turn: a.st.turn, Message: q.Message, InboxSeq: q.Seq}); err != nil {
		return err
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
	return nil
}

// Discard drops a queued message before it is admitted and records
// agent/inbox/discarded. For a late answer this releases its reservation:
// the question stays answerable (D8, §7). A message in the inbox that the
// reader has not delivered yet is spliced first, with every message before
// it, as the reader would have: a reply the service accepted holds its call
// from then on, so "no such message" would be untrue. A message that was
// admitted, discarded or released already is CONFLICT; one the inbox does
// not hold is NOT_FOUND.
func (a *Agent) Discard(ctx context.Context, messageID, reason string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	it, ok := a.st.inbox[messageID]
	if !ok {
		if err := a.spliceUpTo(ctx, messageID); err != nil {
			return err
		}
		it, ok = a.st.inbox[messageID]
	}
	switch {
	case !ok:
		return holdover.Newf(holdover.CodeNotFound, "session %s has no inbox message %q", a.sid, messageID)
	case !slices.Contains(a.st.queue, it):
		return holdover.Newf(holdover.CodeConflict, "inbox message %q of session %s is no longer queued", messageID, a.sid)
	}
	if reason == "" {
		reason = "discarded on request"
	}
	return a.record(ctx, &events.InboxDiscarded{Turn: a.st.turn, MessageID: messageID, Reason: reason})
}

// spliceUpTo reads the inbox after the last spliced message and splices
// each message up to the one named messageID, if the inbox holds it. Held
// a.mu; the reader's own delivery of them later is passed over.
func (a *Agent) spliceUpTo(ctx context.Context, messageID string) error {
	unread, _, err := inbox.Since(ctx, a.rt.stream, a.sid, a.st.inboxSeq)
	if err != nil {
		return err
	}
	last := slices.IndexFunc(unread, func(q inbox.Queued) bool { return q.Message.ID == messageID })
	for _, q := range unread[:last+1] {
		if err := a.spliceLocked(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// finalText is the text of the last assistant message that has any.
func (a *Agent) finalText() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.st.history) - 1; i >= 0; i-- {
		if m := a.st.history[i]; m.Role == model.Assistant && m.Text != "" {
			return m.Text
		}
	}
	return ""
}

// callRunner serves one tool call's requests to the runtime.
type callRunner struct {
	agent *Agent
	call  Call
	subs  atomic.Int64
}

// Dispatch runs a run_code sub-call and records it as tool/ptc-dispatch
// once it has a result: a sub-call interrupted before that record is lost
// with its parent (§7), one recorded pending becomes a continued question
// (D4).
func (r *callRunner) Dispatch(ctx context.Context, name string, args json.RawMessage) holdover.ToolResult {
	a := r.agent
	sub := Call{
		Session: a.sid, Turn: r.call.Turn, Agent: r.call.Agent, Name: name, Arguments: args,
		ID: fmt.Sprintf("%s/%d", r.call.ID, r.subs.Add(1)),
	}
	sub.Runner = &callRunner{agent: a, call: sub}
	res := a.tools.call(ctx, sub)
	parts, terr := content(res)
	if err := a.locked(ctx, &events.PTCDispatch{
		Turn: sub.Turn, ParentCallID: r.call.ID, CallID: sub.ID, Name: name, Arguments: args,
		Content: parts, IsError: res.IsError, Error: terr,
	}); err != nil {
		return failure(err)
	}
	return res
}

// Tools is every tool but run_code itself.
func (r *callRunner) Tools() []string { return r.agent.tools.without(RunCodeTool).names() }

// RunChild runs a child agent on task in a Session of its own, registered
// as a child owned by this agent's Session: its questions fail
// DELEGATED_CALLER (M9) and it reports them in its final message instead.
func (r *callRunner) RunChild(ctx context.Context, task string) holdover.ToolResult {
	a := r.agent
	if a.child {
		return failure(holdover.New(holdover.CodeBadRequest, "a child agent cannot start another"))
	}
	sid := ChildSession(a.sid, r.call.ID)
	epoch, err := a.rt.roots.RegisterChild(ctx, sid, a.rt.instance, a.sid)
	if err != nil {
		return failure(err)
	}
	ref := holdover.AgentRef{Instance: a.rt.instance, Epoch: epoch, Owner: a.sid}
	child := a.rt.newAgent(sid, ref, a.rt.cfg.ChildModel, a.rt.childTools, true)
	defer func() {
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		_ = a.rt.roots.Release(release, sid, ref) // a child left registered can still never ask
	}()
	if err := child.runTask(ctx, task); err != nil {
		return failure(err)
	}
	text := child.finalText()
	if text == "" {
		text = "The child agent finished without a final message."
	}
	return holdover.ToolResult{Text: text}
}

// runTask runs one Turn of a child on its task.
func (a *Agent) runTask(ctx context.Context, task string) error {
	if err := a.load(ctx); err != nil {
		return err
	}
	a.mu.Lock()
	var err error
	if a.st.turn == "" {
		err = a.record(ctx, &events.TurnStart{Turn: newID("turn")})
	}
	if err == nil {
		err = a.record(ctx, &events.UserMessage{Turn: a.st.turn, Message: events.Message{
			ID: newID("msg"), Role: string(model.User), Content: events.Text(task), Source: events.Source{Kind: events.SourceUser},
		}})
	}
	a.mu.Unlock()
	if err != nil {
		return err
	}
	return a.runTurn(ctx)
}

// ChildSession names the Session of the child agent that subagent call
// callID of Session sid runs: readable, one per call, and a valid Session
// id, so an operator finds the child's log from the parent's call.
func ChildSession(sid, callID string) string {
	sum := sha256.Sum256([]byte(sid + "\x00" + callID))
	return fmt.Sprintf("%.100s-sub-%s", sid, hex.EncodeToString(sum[:8]))
}

// newID returns a random id with a readable prefix.
func newID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return prefix + "-" + hex.EncodeToString(b[:])
}
