package userquestions

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/waiter"
)

// A claim (W2–W4) is an ephemeral push consumer on the claims stream that
// an answer UI holds while it shows a keyed or timed request. The worker
// never hears from it directly: the worker owning the wait sees the
// consumer appear and disappear through JetStream's consumer advisories,
// and NATS itself removes the consumer InactiveThreshold after its
// subscriber's interest is gone, whether the Client closed it, crashed or
// lost its gateway. No heartbeat travels over a claim; the only messages
// in it are the worker's frames: exactly one remainingMs frame after the
// attach, and a closing frame when the request settles. Past the wait's
// deadline the worker also asks the holder, on the same deliver subject,
// whether it is alive ([ProbeClaim]): a frozen holder keeps its
// connection, and so its consumer, until the server's pings close it.
//
// A consumer name carries everything a worker needs to act on an advisory,
// which names only stream and consumer:
//
//	claim~<session>~<call token>~<claim id>   a Client's claim on one wait
//	lease~<role>~<id>                         a process's liveness lease (package lease)
//
// Session ids and call tokens never hold '~' (streams.CheckSession,
// streams.Token), so the split is unambiguous.
const (
	nameSep         = leases.Sep
	claimKind       = "claim"
	claimTopic      = streams.ClaimFramePrefix + "." // + <session>.<call token>.<claim id>: the claim's frames
	MaxClaimNameLen = 255                            // JetStream's limit on consumer names
)

// NewClaimName returns the consumer name and the frame subject of a new
// claim on the wait of (sid, callID).
func NewClaimName(sid, callID string) (name, subject string, err error) {
	if err := streams.CheckSession(sid); err != nil {
		return "", "", err
	}
	tok, err := streams.Token(callID)
	if err != nil {
		return "", "", holdover.Wrap(err, holdover.CodeBadRequest, "call id")
	}
	id := nuid.Next()
	name = strings.Join([]string{claimKind, sid, tok, id}, nameSep)
	if len(name) > MaxClaimNameLen {
		return "", "", holdover.Newf(holdover.CodeBadRequest,
			"Session %q and call %q are too long together to name a claim (%d of %d bytes)", sid, callID, len(name), MaxClaimNameLen)
	}
	return name, claimTopic + sid + "." + tok + "." + id, nil
}

// FrameSubject is the subject whose messages the claim consumer delivers.
func FrameSubject(name string) (string, bool) {
	if _, ok := ParseClaim(name); !ok {
		return "", false
	}
	parts := strings.Split(name, nameSep)
	return claimTopic + parts[1] + "." + parts[2] + "." + parts[3], true
}

// ParseClaim reads the wait a claim consumer name claims; ok is false for
// leases and for any name NewClaimName would not have made.
func ParseClaim(name string) (waiter.Key, bool) {
	parts := strings.Split(name, nameSep)
	// The Session id and the claim id (a nuid) are both plain tokens.
	if len(parts) != 4 || parts[0] != claimKind || streams.CheckSession(parts[1]) != nil || streams.CheckSession(parts[3]) != nil {
		return waiter.Key{}, false
	}
	call, err := streams.FromToken(parts[2])
	if err != nil {
		return waiter.Key{}, false
	}
	if tok, err := streams.Token(call); err != nil || tok != parts[2] {
		return waiter.Key{}, false // not the one spelling Token gives: a subject could differ
	}
	return waiter.Key{Session: parts[1], CallID: call}, true
}

// ClaimFrame is one message the worker sends into a claim: the one
// remaining time it computed (W3), or the closing frame (W4).
// RemainingMs is -1 for a wait without a deadline. It is stored in
// the claims stream until delivered, so its shape is in the persistence
// catalog (D10).
type ClaimFrame struct {
	RemainingMs *int64 `json:"remainingMs,omitempty"`
	Closed      bool   `json:"closed,omitempty"`
}

// RemainingFrame is the one frame of a new claim: the time left to the
// wait's deadline, or -1 for [waiter.NoDeadline].
func RemainingFrame(d time.Duration) []byte {
	ms := int64(-1)
	if d != waiter.NoDeadline {
		ms = d.Milliseconds()
	}
	data, _ := json.Marshal(ClaimFrame{RemainingMs: &ms}) // a pointer to an int always encodes
	return data
}

// ClosingFrame closes a claim when its wait settles (W4).
var ClosingFrame = []byte(`{"closed":true}`)

// FrameProbe is the [HeaderFrame] of a claim probe: a core message with
// an empty body that the worker sends to a claim's deliver subject past
// its wait's deadline, when the caller asks whether the wait is live;
// never stored. The holder answers at once with an empty message on the
// probe's reply subject ([IsProbe]); one that does not answer in time
// loses its claim.
const FrameProbe = "probe"

// probeReplies is the token after [streams.OutcomePrefix] of a probe's
// reply subject: holders publish only under that prefix.
const probeReplies = "probe"

// IsProbe reports whether a message on a claim's deliver subject is the
// worker's probe rather than a frame. The holder answers it with
// m.Respond(nil).
func IsProbe(m *nats.Msg) bool { return m.Reply != "" && m.Header.Get(HeaderFrame) == FrameProbe }

// ProbeClaim asks the holder of a claim, on deliver, the claim consumer's
// deliver subject, whether it is alive, and reports whether it answered
// before ctx ended. Nobody subscribed to deliver is NOT_FOUND.
func ProbeClaim(ctx context.Context, nc *nats.Conn, deliver string) (bool, error) {
	reply := streams.OutcomePrefix + "." + probeReplies + "." + nuid.Next()
	sub, err := nc.SubscribeSync(reply)
	if err != nil {
		return false, holdover.Wrapf(err, holdover.CodeInternal, "subscribe to the probe reply %s", reply)
	}
	defer func() { _ = sub.Unsubscribe() }()
	m := nats.NewMsg(deliver)
	m.Reply = reply
	m.Header.Set(HeaderFrame, FrameProbe)
	if err := nc.PublishMsg(m); err != nil {
		return false, holdover.Wrapf(err, holdover.CodeInternal, "probe %s", deliver)
	}
	got, err := sub.NextMsgWithContext(ctx)
	switch {
	case err != nil:
		return false, holdover.Wrapf(err, holdover.CodeInternal, "the holder of %s did not answer the probe", deliver)
	case IsNoResponders(got):
		return false, holdover.Newf(holdover.CodeNotFound, "nobody is subscribed to the claim's deliver subject %s", deliver)
	}
	return true, nil
}
