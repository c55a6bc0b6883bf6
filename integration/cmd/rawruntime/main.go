// Command rawruntime is a minimal agent runtime written from
// docs/agent-protocol.md and the files in schemas/ alone, as a runtime
// author in another language would write one: it imports no Holdover
// package (a test checks its imports), only nats.go and a JSON Schema
// validator, and checks every event it records and every reply it reads
// against the schema files before it trusts them.
//
// It runs one scripted Turn in a Session: a timed question answered in
// time, a timed question that goes pending and is answered late (the reply
// is read from the inbox and admitted once), and, in another Session, a
// request/header that declares its question tool the way a model API does
// (under "parameters"), which Holdover must reject loudly. It prints one
// JSON line on stdout per milestone: ready, answered, pending, admitted,
// malformed, done. Any failure is written to stderr and exits 1.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.url, "nats", nats.DefaultURL, "NATS server URL")
	flag.StringVar(&cfg.creds, "creds", "", "the agent role's NATS credentials file (holdover auth init writes it; §0)")
	flag.StringVar(&cfg.inboxPrefix, "inbox-prefix", "_INBOX.agent", "the reply subjects' prefix the agent role may subscribe to (§0)")
	flag.StringVar(&cfg.schemas, "schemas", "schemas", "the schemas folder of the Holdover repository")
	flag.StringVar(&cfg.session, "session", "s1", "the Session to run")
	flag.StringVar(&cfg.instance, "instance", "raw-runtime", "this runtime's instance id")
	flag.IntVar(&cfg.pendingSeconds, "pending-timeout", 1, "the timeout in seconds of the question nobody answers in time")
	flag.StringVar(&cfg.malformed, "malformed-session", "", "a Session to record a malformed request/header in")
	flag.DurationVar(&cfg.patience, "patience", time.Minute, "how long to wait for an answer, a reply or the server")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "rawruntime:", err)
		os.Exit(1)
	}
}

type config struct {
	url, creds, inboxPrefix               string
	schemas, session, instance, malformed string
	pendingSeconds                        int
	patience                              time.Duration
}

// releaseBound is the inactive_threshold of this runtime's leases (§4).
const releaseBound = 2 * time.Second

// The names of the protocol (docs/agent-protocol.md §1).
const (
	toolName      = "ask_user_question"
	askTimed      = "holdover.q.askTimed"
	callerHeader  = "Holdover-Caller-Lease"
	frameHeader   = "Holdover-Frame"
	prevHeader    = "Holdover-Prev-Seq"
	errorHeader   = "Nats-Service-Error-Code"
	markerHeader  = "Holdover-Reservation"
	advisoryGone  = "$JS.EVENT.ADVISORY.CONSUMER.DELETED.CLAIMS."
	replySource   = "user-question-reply"
	timedToolJSON = `{"type":"object","properties":{"questions":{"type":"array","minItems":1,"items":{"type":"object"}},"timeout":{"type":"integer","minimum":-1,"maximum":2147483},"intent":{"type":"object"}},"required":["questions"]}`
)

// The pending text the model reads (M6, docs/agent-protocol.md §5).
func pendingText(callID string) string {
	msg := "No answer batch arrived before the timeout. The question is pending: this is not a skipped answer. " +
		"Continue with useful work that does not depend on the answer. The user may still answer; the reply will arrive as a user message of kind " +
		`"answer_to_pending_question" with callId "` + callID + `" and the original questions. ` +
		"Do not treat this as permission to do anything that needs the user's answer or approval."
	data, _ := json.Marshal(map[string]any{"pending": true, "callId": callID, "message": msg})
	return string(data)
}

type question struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Options  []option `json:"options,omitempty"`
}

type option struct {
	Label string `json:"label"`
}

type answer struct {
	ID       string   `json:"id"`
	Selected []string `json:"selected"`
	Custom   string   `json:"custom,omitempty"`
}

type message struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Content []part `json:"content"`
	Source  struct {
		Kind    string `json:"kind"`
		CallID  string `json:"callId,omitempty"`
		Outcome string `json:"outcome,omitempty"`
	} `json:"source"`
}

type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func run(cfg config) error {
	ctx := context.Background()
	// §0: the agent role's credentials, and its inbox prefix, the only
	// reply subjects it may subscribe to.
	opts := []nats.Option{nats.CustomInboxPrefix(cfg.inboxPrefix)}
	if cfg.creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.creds))
	}
	nc, err := nats.Connect(cfg.url, opts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	check, err := loadSchemas(cfg.schemas)
	if err != nil {
		return err
	}
	rt := &runtime{cfg: cfg, nc: nc, js: js, check: check, turn: "t1"}

	// §4: the root lease before any registration, then the caller lease
	// every ask names (§6).
	rootLease, err := rt.holdLease(ctx, "root", cfg.instance)
	if err != nil {
		return err
	}
	callerLease, err := rt.holdLease(ctx, "caller", cfg.instance)
	if err != nil {
		return err
	}
	rt.callerLease = callerLease.name
	if err := rt.register(ctx); err != nil {
		return err
	}
	if err := rt.openLog(ctx); err != nil {
		return err
	}
	replies, err := rt.readInbox(ctx)
	if err != nil {
		return err
	}
	say("ready", map[string]any{"session": cfg.session, "epoch": rt.epoch})

	// A timed question, answered in time (M7).
	region := []question{{ID: "region", Question: "Where should it run?", Options: []option{{"eu"}, {"us"}}}}
	db := []question{{ID: "db", Question: "Which database?", Options: []option{{"PostgreSQL"}, {"SQLite"}}}}
	if err := rt.record(ctx, "turn/start", map[string]any{"turn": rt.turn}); err != nil {
		return err
	}
	header := map[string]any{"turn": rt.turn, "model": "scripted", "tools": []any{
		map[string]any{"name": toolName, "description": "Ask the user.", "inputSchema": json.RawMessage(timedToolJSON)},
	}}
	if err := rt.record(ctx, "request/header", header); err != nil {
		return err
	}
	answers, pending, err := rt.ask(ctx, "call_1", db, 60)
	switch {
	case err != nil:
		return err
	case pending:
		return errors.New("call_1 went pending; the test answers it in time")
	}
	say("answered", map[string]any{"callId": "call_1", "answers": answers})

	// A timed question nobody answers in time: pending (M6).
	_, pending, err = rt.ask(ctx, "call_2", region, cfg.pendingSeconds)
	switch {
	case err != nil:
		return err
	case !pending:
		return errors.New("call_2 was answered in time; the test leaves it pending")
	}
	if err := rt.record(ctx, "step/end", map[string]any{"turn": rt.turn, "step": 1}); err != nil {
		return err
	}
	say("pending", map[string]any{"callId": "call_2"})

	// The late answer arrives in the inbox: splice, claim, admit (§9).
	var reply inboxMsg
	select {
	case reply = <-replies:
	case <-time.After(cfg.patience):
		return errors.New("no late reply arrived in the inbox")
	}
	if reply.msg.Source.Kind != replySource || reply.msg.Source.CallID != "call_2" {
		return fmt.Errorf("the inbox message %s is not a reply to call_2", reply.msg.ID)
	}
	if err := rt.record(ctx, "agent/inbox/spliced", map[string]any{"turn": rt.turn, "message": reply.msg, "inboxSeq": reply.seq}); err != nil {
		return err
	}
	if err := rt.record(ctx, "agent/inbox/claimed", map[string]any{"turn": rt.turn, "messageId": reply.msg.ID}); err != nil {
		return err
	}
	if err := rt.record(ctx, "user/message", map[string]any{"turn": rt.turn, "message": reply.msg}); err != nil {
		return err
	}
	say("admitted", map[string]any{"callId": "call_2", "messageId": reply.msg.ID})
	if err := rt.record(ctx, "turn/end", map[string]any{"turn": rt.turn, "reason": "done"}); err != nil {
		return err
	}

	if cfg.malformed != "" {
		problems, err := rt.malformedHeader(ctx, cfg.malformed)
		if err != nil {
			return err
		}
		say("malformed", map[string]any{"session": cfg.malformed, "problems": problems})
	}

	// §13: release the Session, then end the leases: drop their
	// subscriptions, and NATS deletes them within the release bound (the
	// agent role may not delete consumers).
	if err := rt.release(ctx); err != nil {
		return err
	}
	for _, lease := range []*nats.Subscription{callerLease.sub, rootLease.sub} {
		if err := lease.Unsubscribe(); err != nil {
			return fmt.Errorf("end lease %s: %w", lease.Subject, err)
		}
	}
	say("done", nil)
	return nil
}

// say prints one milestone.
func say(event string, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["event"] = event
	data, _ := json.Marshal(fields)
	fmt.Println(string(data))
}

// schemaCheck validates a JSON document against a schema file of the
// folder, by its path there ("event.json", "replies/ask-timed.json").
type schemaCheck func(file string, data []byte) error

// loadSchemas compiles every schema file of dir, with formats asserted
// (docs: "any validator of draft 2020-12, with format asserted").
func loadSchemas(dir string) (schemaCheck, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	compiled := map[string]*jsonschema.Schema{}
	for _, file := range []string{"event.json", "replies/ask-timed.json", "frames/accepted.json", "inbox/message.json", "inbox/reply-text.json", "kv/live-root.json", "requests/ask-timed.json"} {
		s, err := c.Compile(filepath.Join(dir, file))
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: %w", file, err)
		}
		compiled[file] = s
	}
	return func(file string, data []byte) error {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: not JSON: %w", file, err)
		}
		if err := compiled[file].Validate(doc); err != nil {
			return fmt.Errorf("does not fit %s: %w", file, err)
		}
		return nil
	}, nil
}

// runtime is this process's hold on one Session.
type runtime struct {
	cfg         config
	nc          *nats.Conn
	js          jetstream.JetStream
	check       schemaCheck
	callerLease string
	epoch       uint64
	revision    uint64 // of the liveRoots record this runtime wrote
	last        uint64 // the seq of the Session's last event (a SESSIONS stream sequence)
	turn        string
}

// lease is a lease this runtime holds: its consumer's name, and the
// subscription whose interest keeps it.
type lease struct {
	name string
	sub  *nats.Subscription
}

// holdLease holds lease~<role>~<id> (§4): subscribe to the deliver
// subject by its own name first, then create the consumer, filtered to
// holdover.claim.lease.<role>.<id> (nats.go puts the filter in the create
// subject, as the agent role's permissions require).
func (rt *runtime) holdLease(ctx context.Context, role, id string) (lease, error) {
	name := "lease~" + role + "~" + id
	deliver := rt.nc.NewInbox()
	sub, err := rt.nc.Subscribe(deliver, func(*nats.Msg) {})
	if err != nil {
		return lease{}, err
	}
	if err := rt.nc.Flush(); err != nil {
		return lease{}, err
	}
	_, err = rt.js.CreatePushConsumer(ctx, "CLAIMS", jetstream.ConsumerConfig{
		Name:              name,
		DeliverSubject:    deliver,
		FilterSubject:     "holdover.claim.lease." + role + "." + id,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: releaseBound,
		MemoryStorage:     true,
		Replicas:          1,
		Metadata:          map[string]string{"role": role, "id": id},
	})
	if err != nil {
		return lease{}, fmt.Errorf("hold lease %s: %w", name, err)
	}
	return lease{name: name, sub: sub}, nil
}

type liveRoot struct {
	Instance string    `json:"instance"`
	Epoch    uint64    `json:"epoch"`
	Since    time.Time `json:"since"`
}

// register makes this instance the Session's live root, with the epoch
// one past the record's: a create when there is none, else an update at
// the revision read (§4).
func (rt *runtime) register(ctx context.Context) error {
	kv, err := rt.js.KeyValue(ctx, "liveRoots")
	if err != nil {
		return err
	}
	for attempt := 0; attempt < 5; attempt++ {
		var old liveRoot
		var rev uint64
		entry, err := kv.Get(ctx, rt.cfg.session)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			if err := rt.check("kv/live-root.json", entry.Value()); err != nil {
				return err
			}
			if err := json.Unmarshal(entry.Value(), &old); err != nil {
				return err
			}
			rev = entry.Revision()
		}
		rec := liveRoot{Instance: rt.cfg.instance, Epoch: old.Epoch + 1, Since: time.Now().UTC()}
		data, _ := json.Marshal(rec)
		if rev == 0 {
			rev, err = kv.Create(ctx, rt.cfg.session, data)
		} else {
			rev, err = kv.Update(ctx, rt.cfg.session, data, rev)
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			continue // another instance registered meanwhile: read again
		}
		if err != nil {
			return fmt.Errorf("register: %w", err)
		}
		rt.epoch, rt.revision = rec.Epoch, rev
		return nil
	}
	return errors.New("register: the record kept changing")
}

// release empties the record's instance, keeping the epoch, at the
// revision this runtime wrote: a stale runtime changes nothing (§12).
func (rt *runtime) release(ctx context.Context) error {
	kv, err := rt.js.KeyValue(ctx, "liveRoots")
	if err != nil {
		return err
	}
	data, _ := json.Marshal(liveRoot{Epoch: rt.epoch, Since: time.Now().UTC()})
	_, err = kv.Update(ctx, rt.cfg.session, data, rt.revision)
	return err
}

// openLog reads the seq of the Session's last event (§3).
func (rt *runtime) openLog(ctx context.Context) error {
	stream, err := rt.js.Stream(ctx, "SESSIONS")
	if err != nil {
		return err
	}
	m, err := stream.GetLastMsgForSubject(ctx, "holdover.session."+rt.cfg.session+".events")
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		rt.last = 0
	case err != nil:
		return err
	default:
		rt.last = m.Sequence
	}
	return nil
}

// record appends one event to the Session's log, fenced (§3), once the
// schema says it is one Holdover can read.
func (rt *runtime) record(ctx context.Context, typ string, data any) error {
	body, err := json.Marshal(map[string]any{"type": typ, "at": time.Now().UTC().Format(time.RFC3339Nano), "data": data})
	if err != nil {
		return err
	}
	if err := rt.check("event.json", body); err != nil {
		return fmt.Errorf("%s: %w", typ, err)
	}
	seq, err := rt.publishEvent(ctx, rt.cfg.session, rt.last, body)
	if err != nil {
		return fmt.Errorf("record %s: %w", typ, err)
	}
	rt.last = seq
	return nil
}

// publishEvent appends body after the event `after` of sid and returns
// its seq: both headers name the Session's last event.
func (rt *runtime) publishEvent(ctx context.Context, sid string, after uint64, body []byte) (uint64, error) {
	m := nats.NewMsg("holdover.session." + sid + ".events")
	m.Header.Set(prevHeader, strconv.FormatUint(after, 10))
	m.Data = body
	ack, err := rt.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(after))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// ask records an ask_user_question call, asks it of holdover.q.askTimed,
// and records its result (§6): the batch, or the pending text.
func (rt *runtime) ask(ctx context.Context, callID string, questions []question, timeoutSeconds int) ([]answer, bool, error) {
	args := map[string]any{"questions": questions, "timeout": timeoutSeconds}
	if err := rt.record(ctx, "tool/call", map[string]any{"turn": rt.turn, "callId": callID, "name": toolName, "arguments": args}); err != nil {
		return nil, false, err
	}
	answers, pending, err := rt.askTimed(callID, questions, int64(timeoutSeconds)*1000)
	if err != nil {
		return nil, false, err
	}
	text := pendingText(callID)
	if !pending {
		data, _ := json.Marshal(map[string]any{"answers": answers})
		text = string(data)
	}
	result := map[string]any{"turn": rt.turn, "callId": callID, "name": toolName, "content": []part{{Type: "text", Text: text}}}
	if err := rt.record(ctx, "tool/result", result); err != nil {
		return nil, false, err
	}
	return answers, pending, nil
}

// askTimed sends one askTimed and waits for its reply. The accepted frame
// names the owning worker, whose lease it then follows: a worker that
// ends before the reply leaves the call pending (§7).
func (rt *runtime) askTimed(callID string, questions []question, timeoutMs int64) ([]answer, bool, error) {
	req, _ := json.Marshal(map[string]any{
		"session": rt.cfg.session, "callId": callID, "questions": questions, "timeoutMs": timeoutMs,
		"agent": map[string]any{"instance": rt.cfg.instance, "epoch": rt.epoch},
	})
	if err := rt.check("requests/ask-timed.json", req); err != nil {
		return nil, false, err
	}
	replies := make(chan *nats.Msg, 4)
	inbox := rt.nc.NewInbox()
	sub, err := rt.nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	m := nats.NewMsg(askTimed)
	m.Reply = inbox
	m.Header.Set(callerHeader, rt.callerLease)
	m.Data = req
	if err := rt.nc.PublishMsg(m); err != nil {
		return nil, false, err
	}
	var workerGone <-chan *nats.Msg
	patience := time.After(time.Duration(timeoutMs)*time.Millisecond + rt.cfg.patience)
	for {
		select {
		case m := <-replies:
			if m.Header.Get(frameHeader) == "accepted" {
				if err := rt.check("frames/accepted.json", m.Data); err != nil {
					return nil, false, err
				}
				var acc struct{ Owner string }
				_ = json.Unmarshal(m.Data, &acc)
				var unfollow func()
				if workerGone, unfollow, err = rt.followWorker(acc.Owner); err != nil {
					return nil, false, err
				}
				defer unfollow()
				continue
			}
			if code := m.Header.Get(errorHeader); code != "" {
				return nil, false, fmt.Errorf("askTimed %s: %s: %s", callID, code, m.Data)
			}
			if err := rt.check("replies/ask-timed.json", m.Data); err != nil {
				return nil, false, err
			}
			var out struct {
				Answers []answer `json:"answers"`
				Pending bool     `json:"pending"`
			}
			if err := json.Unmarshal(m.Data, &out); err != nil {
				return nil, false, err
			}
			return out.Answers, out.Pending, nil
		case <-workerGone:
			return nil, true, nil // the question stays answerable
		case <-patience:
			return nil, false, fmt.Errorf("askTimed %s: no reply", callID)
		}
	}
}

// followWorker subscribes to the deletion advisory of the worker's lease,
// then looks the lease up once: one that is gone already is gone.
func (rt *runtime) followWorker(owner string) (<-chan *nats.Msg, func(), error) {
	gone := make(chan *nats.Msg, 1)
	sub, err := rt.nc.ChanSubscribe(advisoryGone+owner, gone)
	if err != nil {
		return nil, nil, err
	}
	unfollow := func() { _ = sub.Unsubscribe() }
	if err := rt.nc.Flush(); err != nil {
		unfollow()
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), rt.cfg.patience)
	defer cancel()
	_, err = rt.js.PushConsumer(ctx, "CLAIMS", owner) // leases are push consumers
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		gone <- nil
	case err != nil:
		unfollow()
		return nil, nil, err
	}
	return gone, unfollow, nil
}

type inboxMsg struct {
	seq uint64
	msg message
}

// readInbox follows the Session's inbox, both subject forms, from its
// first message (a new Session), passing over reservation markers and
// messages seen already (§9).
func (rt *runtime) readInbox(ctx context.Context) (<-chan inboxMsg, error) {
	base := "holdover.session." + rt.cfg.session + ".inbox"
	cons, err := rt.js.OrderedConsumer(ctx, "SESSIONS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{base, base + ".*"}})
	if err != nil {
		return nil, err
	}
	out := make(chan inboxMsg, 16)
	seen := map[string]bool{}
	_, err = cons.Consume(func(m jetstream.Msg) {
		if m.Headers().Get(markerHeader) != "" {
			return // a reservation marker, for the question worker
		}
		meta, err := m.Metadata()
		if err != nil {
			fmt.Fprintln(os.Stderr, "rawruntime: an inbox message without metadata:", err)
			return
		}
		if err := rt.check("inbox/message.json", m.Data()); err != nil {
			fmt.Fprintln(os.Stderr, "rawruntime: passing over an inbox message:", err)
			return
		}
		var msg message
		_ = json.Unmarshal(m.Data(), &msg)
		if msg.Source.Kind == replySource {
			if len(msg.Content) != 1 {
				fmt.Fprintln(os.Stderr, "rawruntime: a reply without its one text part")
				return
			}
			if err := rt.check("inbox/reply-text.json", []byte(msg.Content[0].Text)); err != nil {
				fmt.Fprintln(os.Stderr, "rawruntime: a reply whose text is unreadable:", err)
				return
			}
		}
		if seen[msg.ID] {
			return
		}
		seen[msg.ID] = true
		out <- inboxMsg{seq: meta.Sequence.Stream, msg: msg}
	})
	return out, err
}

// malformedHeader records, in Session sid, a request/header declaring the
// question tool under "parameters", as a model API spells it, and returns
// what the schema says of it: Holdover stores it and rejects it loudly.
func (rt *runtime) malformedHeader(ctx context.Context, sid string) ([]string, error) {
	body, _ := json.Marshal(map[string]any{"type": "request/header", "at": time.Now().UTC().Format(time.RFC3339Nano), "data": map[string]any{
		"tools": []any{map[string]any{"name": toolName, "description": "Ask the user.", "parameters": json.RawMessage(timedToolJSON)}},
	}})
	var problems []string
	if err := rt.check("event.json", body); err != nil {
		problems = append(problems, err.Error())
	}
	if _, err := rt.publishEvent(ctx, sid, 0, body); err != nil {
		return nil, err
	}
	return problems, nil
}
