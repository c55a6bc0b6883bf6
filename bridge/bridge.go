package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/streams"
)

// PendingAnswersTool is the tool that hands the host's model the late
// answers waiting for it, for hosts that run no hooks.
const PendingAnswersTool = "pending_answers"

const pendingAnswersDescription = `Return the user's late answers to your earlier ask_user_question calls that returned pending. ` +
	`Each answer is a JSON object of kind "answer_to_pending_question" naming the call id and the original questions; each is returned once. ` +
	`Call it when you reach a point where such an answer would change what you do next.`

// NoAnswersText is the pending_answers result when nothing waits.
const NoAnswersText = "No late answers are waiting."

// Config configures a bridge process.
type Config struct {
	// Conn is the NATS connection, on the agent role's credentials.
	Conn *nats.Conn
	// DefaultTimeout is ask_user_question's timeout in seconds when the
	// model passes none (0: askuser.DefaultTimeout). The tool is always
	// the timed one.
	DefaultTimeout int64
	// Questions is the question service; nil is a caller.Client on Conn,
	// closed with the bridge.
	Questions askuser.Asker
	// Instance names the process in the live-root registry; empty picks
	// "mcp-" and a random suffix.
	Instance string
	// ReleaseBound is how long the root lease outlives the connection
	// (lease.Bound).
	ReleaseBound time.Duration
	// ClaimBound is how long a claim holds a late reply (DefaultClaimBound).
	ClaimBound time.Duration
	// Clock stamps events and ages claims; nil is the real clock.
	Clock  clockwork.Clock
	Logger *slog.Logger
}

// Bridge is one bridge process: the connection, the root lease, the
// question client and the tool, shared by the host sessions it serves.
type Bridge struct {
	cfg    Config
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	roots  *liveroot.Registry
	ask    *askuser.Tool
	log    *slog.Logger

	leaseMu   sync.Mutex
	lease     *lease.Lease
	keepLease func()
	close     func() error
}

// New connects the bridge to the topology and holds its root lease.
func New(ctx context.Context, cfg Config) (*Bridge, error) {
	if cfg.Conn == nil {
		return nil, holdover.New(holdover.CodeBadRequest, "the bridge needs a NATS connection")
	}
	if cfg.Instance == "" {
		cfg.Instance = NewID("mcp")
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	b := &Bridge{cfg: cfg, nc: cfg.Conn, log: cfg.Logger.With("instance", cfg.Instance)}
	var err error
	if b.js, err = jetstream.New(cfg.Conn); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "open JetStream")
	}
	if b.stream, err = b.js.Stream(ctx, streams.SessionsStream); err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "open stream %s (is the topology provisioned?)", streams.SessionsStream)
	}
	kv, err := b.js.KeyValue(ctx, streams.RootsBucket)
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "open bucket %s", streams.RootsBucket)
	}
	b.roots = liveroot.New(kv)
	if b.lease, err = liveroot.HoldLease(ctx, cfg.Conn, b.js, cfg.Instance, cfg.ReleaseBound); err != nil {
		return nil, err
	}
	b.keepLease = lease.OnReconnect(cfg.Conn, 0, b.holdLeaseAgain)
	questions := cfg.Questions
	if questions == nil {
		client, err := caller.New(ctx, cfg.Conn, caller.Config{ReleaseBound: cfg.ReleaseBound, Log: b.log})
		if err != nil {
			b.Close()
			return nil, err
		}
		b.close, questions = client.Close, client
	}
	if b.ask, err = askuser.New(askuser.Config{Mode: askuser.ModeTimed, DefaultTimeout: cfg.DefaultTimeout}, questions); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close ends the root lease and the question client. Release the hosts
// first.
func (b *Bridge) Close() error {
	if b.keepLease != nil {
		b.keepLease()
		b.leaseMu.Lock()
		b.lease.Drop()
		b.leaseMu.Unlock()
	}
	if b.close != nil {
		return b.close()
	}
	return nil
}

// holdLeaseAgain holds the root lease again after a reconnect that
// outlasted it, as the Go runtime does.
func (b *Bridge) holdLeaseAgain(ctx context.Context) {
	b.leaseMu.Lock()
	defer b.leaseMu.Unlock()
	if alive, err := b.lease.Alive(ctx); err != nil || alive {
		return
	}
	b.log.Warn("the root lease ended while cut off from NATS; holding it again", "lease", b.lease.Name())
	b.lease.Drop()
	l, err := liveroot.HoldLease(ctx, b.nc, b.js, b.cfg.Instance, b.cfg.ReleaseBound)
	if err != nil {
		b.log.Error("hold the root lease again", ops.Err(err))
		return
	}
	b.lease = l
}

// Instance is the bridge's instance id.
func (b *Bridge) Instance() string { return b.cfg.Instance }

// Tools are the tools the bridge offers, as request/header records them:
// ask_user_question exactly as askuser defines it, and pending_answers.
func (b *Bridge) Tools() []events.ToolSchema {
	return []events.ToolSchema{b.ask.Schema(), {
		Name:        PendingAnswersTool,
		Description: pendingAnswersDescription,
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
	}}
}

// Host is one host session served as a Holdover Session.
type Host struct {
	b   *Bridge
	log *Log
	ref holdover.AgentRef
	lg  *slog.Logger
}

// Open makes the bridge the live root of Session sid, unless another
// runtime whose lease is alive serves it (CONFLICT, saying so). A root
// that died (a killed host) is taken over once its lease ends, within the
// release bound; Open waits that long for it. It then repairs the tool
// calls recorded without a result (TOOL_OUTCOME_UNKNOWN, D3), so a question
// a killed host was waiting on stays answerable, and records the
// request/header with the tools offered.
func (b *Bridge) Open(ctx context.Context, sid string) (*Host, error) {
	if err := streams.CheckSession(sid); err != nil {
		return nil, err
	}
	exists := liveroot.Leases(b.js)
	deadline := time.Now().Add(lease.Bound(b.cfg.ReleaseBound) + time.Second)
	var (
		epoch uint64
		err   error
	)
	for {
		epoch, err = b.roots.RegisterAlone(ctx, sid, b.cfg.Instance, exists)
		if !holdover.HasCode(err, holdover.CodeConflict) || time.Now().After(deadline) {
			break
		}
		// The other root may be a host that was just killed: its lease
		// ends within the release bound.
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, err
	}
	h := &Host{
		b: b, ref: holdover.AgentRef{Instance: b.cfg.Instance, Epoch: epoch},
		log: NewLog(b.js, b.stream, sid, b.cfg.Clock, b.cfg.ClaimBound),
		lg:  b.log.With("session", sid, "epoch", epoch),
	}
	_, err = h.log.transact(ctx, func(f *folded) ([]events.Body, error) {
		var bodies []events.Body
		for _, c := range f.open {
			bodies = append(bodies, runtime.Interrupted(c))
		}
		return append(bodies, &events.RequestHeader{Tools: b.Tools()}), nil
	})
	if err != nil {
		h.Release(ctx)
		return nil, err
	}
	h.lg.Info("serving a host session")
	return h, nil
}

// Session is the host's Holdover Session id.
func (h *Host) Session() string { return h.log.sid }

// Release ends the host's registration, so an answer resumes the Session
// elsewhere at once.
func (h *Host) Release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := h.b.roots.Release(ctx, h.log.sid, h.ref); err != nil && !h.b.nc.IsClosed() {
		h.lg.Warn("release the live root", ops.Err(err))
	}
}

// AskResult is an ask_user_question call's outcome: its result, and the
// late replies admitted with it.
type AskResult struct {
	CallID string
	Result holdover.ToolResult
	Late   []Delivery
}

// Ask runs one ask_user_question call: it records the call, asks (the
// answers, or pending at the timeout), records the result, and then hands
// over what waits in the inbox with it. Recording fails only when NATS
// does; the question's own failures are in Result.
func (h *Host) Ask(ctx context.Context, args json.RawMessage) (AskResult, error) {
	if len(args) == 0 || !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	out := AskResult{CallID: NewID("call")}
	if err := h.log.Append(ctx, &events.ToolCall{CallID: out.CallID, Name: holdover.ToolName, Arguments: args}); err != nil {
		return out, err
	}
	out.Result = h.b.ask.Call(ctx, askuser.Call{Session: h.log.sid, CallID: out.CallID, Agent: &h.ref, Arguments: args})
	if ctx.Err() != nil {
		// The host went away or cancelled the call: what it gets no longer
		// matters, and a host that restarts repairs the call (D3).
		return out, context.Cause(ctx)
	}
	if err := h.log.Append(ctx, runtime.ResultEvent("", out.CallID, holdover.ToolName, out.Result)); err != nil {
		return out, err
	}
	late, err := h.log.Deliver(ctx)
	if err != nil {
		h.lg.Warn("hand over late replies with a result; they stay queued", ops.Err(err))
	}
	out.Late = late
	return out, nil
}

// PendingAnswers hands over what waits in the inbox: the pending_answers
// tool. The call and its result are recorded like any tool's.
func (h *Host) PendingAnswers(ctx context.Context) ([]Delivery, error) {
	callID := NewID("call")
	if err := h.log.Append(ctx, &events.ToolCall{CallID: callID, Name: PendingAnswersTool, Arguments: json.RawMessage("{}")}); err != nil {
		return nil, err
	}
	late, err := h.log.Deliver(ctx)
	res := holdover.ToolResult{Text: NoAnswersText}
	if err != nil {
		w := holdover.Wire(err)
		res = holdover.ToolResult{Text: string(w.Code) + ": " + w.Message, IsError: true, Code: w.Code}
	} else if len(late) > 0 {
		texts := make([]string, len(late))
		for i, d := range late {
			texts[i] = d.Text()
		}
		res.Text = strings.Join(texts, "\n")
	}
	if rerr := h.log.Append(ctx, runtime.ResultEvent("", callID, PendingAnswersTool, res)); rerr != nil && err == nil {
		err = rerr
	}
	return late, err
}

// NewID returns a random id with a readable prefix, a valid Session, call
// and instance id.
func NewID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return prefix + "-" + hex.EncodeToString(b[:])
}
