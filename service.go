package holdover

// The requests and results of the question service. They are the wire
// shapes of the userQuestions micro service and the Go types its clients use.

// AgentRef names the runtime instance that asks (M9). Epoch is the
// instance's registration epoch in the live-root registry; Owner is set for
// a child agent and names the agent that owns it.
type AgentRef struct {
	Instance string `json:"instance"`
	Epoch    uint64 `json:"epoch"`
	Owner    string `json:"owner,omitempty"`
}

// AskRequest asks questions and waits until they are answered (ask). With
// a CallID it is keyed (a timed-schema call with timeout -1, M3) and
// tracked; without one it is a legacy, untracked request.
type AskRequest struct {
	Session   string     `json:"session"`
	CallID    string     `json:"callId,omitempty"`
	Agent     *AgentRef  `json:"agent,omitempty"`
	Questions []Question `json:"questions"`
	Intent    *Intent    `json:"intent,omitempty"`
}

// AskTimedRequest asks questions with a bounded foreground wait (askTimed).
type AskTimedRequest struct {
	Session   string     `json:"session"`
	CallID    string     `json:"callId"`
	Agent     *AgentRef  `json:"agent,omitempty"`
	Questions []Question `json:"questions"`
	TimeoutMs int64      `json:"timeoutMs"`
}

// Outcome is how a timed foreground wait ended: with answers, or pending.
type Outcome struct {
	Answers []Answer `json:"answers,omitempty"`
	Pending bool     `json:"pending,omitempty"`
}

// AnswerRequest is a late answer to a continued call (D6).
type AnswerRequest struct {
	Session string   `json:"session"`
	CallID  string   `json:"callId"`
	Answers []Answer `json:"answers"`
	// User is who gave the answer, recorded in the reply's source so an
	// operator can tell who approved what. The service takes it from the
	// UserHeader a gateway sets, never from the body a Client writes.
	User string `json:"-"`
}

// UserHeader names, on a request a gateway makes for a Client, the user
// its access token authenticated. The answer endpoint, which reads it, is
// open to gateways and admins only (package auth), and a Client writes
// params, never headers.
const UserHeader = "Holdover-User"

// AnswerResult says whether a late answer was accepted and, if so, the id
// of the user message queued in the Session inbox.
type AnswerResult struct {
	Accepted  bool   `json:"accepted"`
	MessageID string `json:"messageId,omitempty"`
	// Reason says why an answer was not accepted: CALL_OPEN,
	// CALL_UNKNOWN, CALL_SETTLED or NO_AGENT, with a message for people.
	Reason *Error `json:"reason,omitempty"`
}
