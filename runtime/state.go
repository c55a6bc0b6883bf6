package runtime

import (
	"slices"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/runtime/model"
)

// state is what an agent knows of its Session: the conversation the model
// reads, the inbox messages not yet admitted, and where the open Turn is.
// The log is its only source: [rebuild] folds a Session log into a state,
// and a running agent applies each event it appends, so a process that
// stops at any point resumes from its log alone.
type state struct {
	history []model.Message
	// inbox holds every inbox message the log has spliced, by id, so a
	// redelivered message is never spliced twice.
	inbox map[string]*item
	// queue lists the spliced messages not yet admitted or released, in
	// splice order: the next-step queue.
	queue []*item
	// inboxSeq is the highest inbox stream sequence spliced; reading
	// resumes after it.
	inboxSeq uint64
	// turn is the open Turn, "" when the agent is idle; step counts the
	// steps that Turn has ended.
	turn string
	step int
	// open are the recorded tool calls that have no result yet.
	open []events.ToolCall
	// response is the history index of the model response being recorded,
	// -1 before its first content; requested says a request/header opened
	// one.
	response  int
	requested bool
}

// item is one inbox message and how far it got.
type item struct {
	msg      events.Message
	inboxSeq uint64
	status   itemStatus
}

type itemStatus uint8

const (
	spliced itemStatus = iota
	claimed
	admitted
	discarded
	// released: the Turn ended without admitting it (D8).
	released
)

func newState() *state { return &state{inbox: map[string]*item{}, response: -1} }

// rebuild folds a Session log into the state it describes.
func rebuild(log []events.Event) *state {
	s := newState()
	for _, e := range log {
		s.apply(e)
	}
	return s
}

// apply folds one event. Events of types this version does not know, and
// kinds that say nothing about the conversation, change nothing.
func (s *state) apply(e events.Event) {
	switch b := e.Body.(type) {
	case *events.TurnStart:
		s.turn, s.step = b.Turn, 0
	case *events.TurnEnd:
		s.closeResponse()
		s.turn = ""
		// A Turn that ends releases every reply it did not admit (D8).
		for _, it := range s.queue {
			it.status = released
		}
		s.queue = nil
	case *events.StepEnd:
		s.endStep()
		s.closeResponse()
		s.step = b.Step
	case *events.RequestHeader:
		s.closeResponse()
		s.requested = true
	case *events.AssistantMessage:
		m := s.responseMessage()
		m.Text += events.JoinText(b.Content)
	case *events.ToolCall:
		m := s.responseMessage()
		m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: b.CallID, Name: b.Name, Arguments: b.Arguments})
		s.open = append(s.open, *b)
	case *events.ToolResult:
		s.closeResponse()
		s.open = slices.DeleteFunc(s.open, func(c events.ToolCall) bool { return c.CallID == b.CallID })
		s.history = append(s.history, model.Message{
			Role: model.Tool, ToolCallID: b.CallID, ToolName: b.Name,
			Text: events.JoinText(b.Content), IsError: b.IsError || b.Error != nil,
		})
	case *events.UserMessage:
		s.closeResponse()
		s.history = append(s.history, model.Message{Role: model.Role(b.Message.Role), Text: events.JoinText(b.Message.Content)})
		s.settle(b.Message.ID, admitted)
	case *events.InboxSpliced:
		if _, seen := s.inbox[b.Message.ID]; !seen {
			it := &item{msg: b.Message, inboxSeq: b.InboxSeq}
			s.inbox[b.Message.ID] = it
			s.queue = append(s.queue, it)
		}
		s.inboxSeq = max(s.inboxSeq, b.InboxSeq)
	case *events.InboxClaimed:
		if it, ok := s.inbox[b.MessageID]; ok && it.status == spliced {
			it.status = claimed
		}
	case *events.InboxDiscarded:
		s.settle(b.MessageID, discarded)
	}
}

// responseMessage returns the assistant message of the response being
// recorded, adding it at its first content.
func (s *state) responseMessage() *model.Message {
	if s.response < 0 {
		s.history = append(s.history, model.Message{Role: model.Assistant})
		s.response = len(s.history) - 1
	}
	return &s.history[s.response]
}

// closeResponse ends the response being recorded. A request that ended its
// step with no content was answered with nothing; it stays in the history
// as an empty assistant message, because it was a model turn all the same.
func (s *state) closeResponse() {
	s.response = -1
	s.requested = false
}

// endStep closes a response that had no content at its step's end.
func (s *state) endStep() {
	if s.requested && s.response < 0 {
		s.history = append(s.history, model.Message{Role: model.Assistant})
	}
}

// settle takes a message out of the queue for good.
func (s *state) settle(id string, status itemStatus) {
	it, ok := s.inbox[id]
	if !ok || it.status == admitted || it.status == discarded || it.status == released {
		return
	}
	it.status = status
	s.queue = slices.DeleteFunc(s.queue, func(q *item) bool { return q == it })
}

// needsModel reports whether the open Turn still owes a model request: its
// conversation does not end in a response without tool calls.
func (s *state) needsModel() bool {
	if len(s.history) == 0 {
		return true
	}
	last := s.history[len(s.history)-1]
	return last.Role != model.Assistant || len(last.ToolCalls) > 0
}
