package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// FanOutConfig shapes a fan-out measurement.
type FanOutConfig struct {
	// Sessions are asked in at once, one request each: 1 measures one
	// request at a time, 100 the burst of issue 12.
	Sessions int
	// Clients watch each Session.
	Clients int
	// Watches is how many Sessions each Client watches on its one
	// WebSocket (0 means 1), as a page showing several Sessions does: the
	// measurement opens Sessions × Clients / Watches connections, and a
	// burst brings each of them Watches requests at once.
	Watches int
	// Rounds is how many times every Session is asked.
	Rounds int
	// OneAtATime asks the Sessions of a round one after another, each
	// once the last one's Clients all have their request, instead of all
	// at once: one request at a time with every Client connected.
	OneAtATime bool
	// Protocol is the version the Clients say in hello; 0 is the
	// gateway's own, [clientwire.ProtocolVersion]. Protocol 1 Clients get
	// one frame a message, so a burst to them shows what batching saves.
	Protocol int
}

// The fan-outs `holdover bench` measures (issue 12): one request to 1,000
// Clients watching its Session, and the burst, a request in each of 100
// Sessions at once with 10 Clients each.
var (
	OneRequest = FanOutConfig{Sessions: 1, Clients: 1000, Rounds: 20}
	Burst      = FanOutConfig{Sessions: 100, Clients: 10, Rounds: 20}
)

// check refuses a shape that cannot be measured.
func (c FanOutConfig) check() error {
	if c.Sessions < 1 || c.Clients < 1 || c.Rounds < 1 || c.Watches < 1 || c.Watches > c.Sessions || c.Sessions*c.Clients%c.Watches != 0 {
		return holdover.Newf(holdover.CodeBadRequest, "a fan-out needs at least one Session, Client and round, and Watches dividing Sessions × Clients, not %+v", c)
	}
	return nil
}

// connections is how many WebSockets (and as many raw NATS connections)
// the measurement opens.
func (c FanOutConfig) connections() int { return c.Sessions * c.Clients / c.Watches }

// watched are the Sessions connection i watches: Watches of them in a
// row from i × Watches, wrapping, so each Session has Clients watchers.
func (c FanOutConfig) watched(i int) []int {
	out := make([]int, c.Watches)
	for k := range out {
		out[k] = (i*c.Watches + k) % c.Sessions
	}
	return out
}

// batches are the groups of Sessions a round asks at once.
func (c FanOutConfig) batches() [][]int {
	all := make([]int, c.Sessions)
	for s := range all {
		all[s] = s
	}
	if !c.OneAtATime {
		return [][]int{all}
	}
	one := make([][]int, c.Sessions)
	for s := range one {
		one[s] = all[s : s+1]
	}
	return one
}

// name says what the rows of the shape measure.
func (c FanOutConfig) name() string {
	kind := fmt.Sprintf("burst of %d", c.Sessions)
	switch {
	case c.Sessions == 1:
		kind = "one request"
	case c.OneAtATime:
		kind = "one at a time"
	}
	shape := fmt.Sprintf("%d×%d Clients", c.Sessions, c.Clients)
	if c.Watches > 1 {
		shape += fmt.Sprintf(", %d Sessions a Client", c.Watches)
	}
	if c.Protocol != clientwire.ProtocolVersion {
		shape += fmt.Sprintf(", protocol %d", c.Protocol)
	}
	return fmt.Sprintf("gateway fan-out, %s (%s)", kind, shape)
}

// FanOut measures a gateway's share of a foreground request: from the
// request's publish on each Session's ask subject (the question worker's
// last step, on a worker's credentials) until every Client watching the
// Session has read the request frame. The gateway runs in this process,
// as a gateway process does: on a connection of its own on the gateway's
// credentials, with default limits and a token for each Client; the
// Clients are WebSockets on loopback. The raw primitive, timed between
// the gateway's rounds, is the same burst as core NATS messages of the
// same size, each Session's to as many subscribers, each on an admin
// connection of its own: what NATS itself costs to reach that many
// sockets.
//
// It returns two rows: each round's time from the first publish to the
// last Client, and each Client's time from its Session's publish. A round
// fails unless every Client reads each of its Sessions' requests once.
// Every request is ended (a cancel notice) after its round, as an answer
// ends it, and the next round starts once every Client has been told.
// The measured Sessions have no log, View or root: the fan-out writes
// nothing durable, so a deployment keeps nothing of it.
func (r *Rig) FanOut(ctx context.Context, cfg FanOutConfig) ([]Row, error) {
	cfg.Watches = max(cfg.Watches, 1)
	cfg.Protocol = cmp.Or(cfg.Protocol, clientwire.ProtocolVersion)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := &fanOut{rig: r, cfg: cfg, kind: "fanout" + strconv.FormatInt(r.fanOuts.Add(1), 10), index: make(map[string]int, cfg.Sessions)}
	defer f.close()
	for s := range cfg.Sessions {
		sid := r.Session(f.kind, s)
		f.sids = append(f.sids, sid)
		f.index[sid] = s
	}
	wsURL, stop, err := f.serveGateway(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := f.openClients(ctx, wsURL); err != nil {
		return nil, err
	}
	rawPub, err := f.subscribeRaw()
	if err != nil {
		return nil, err
	}
	asker, _, err := f.dial(auth.Worker, "fanout-asker")
	if err != nil {
		return nil, err
	}

	name := cfg.name()
	last := Row{Key: "last-client", Name: name + " → last Client", RawName: "core publish to as many connections"}
	each := Row{Key: "each-client", Name: name + " → each Client", RawName: "core publish, each subscriber"}
	for round := range cfg.Rounds {
		for _, batch := range cfg.batches() {
			rawLast, rawEach, err := f.rawRound(ctx, rawPub, round, batch)
			if err != nil {
				return nil, err
			}
			gwLast, gwEach, err := f.gatewayRound(ctx, asker, round, batch)
			if err != nil {
				return nil, err
			}
			last.Raw, last.Path = append(last.Raw, rawLast), append(last.Path, gwLast)
			each.Raw, each.Path = append(each.Raw, rawEach...), append(each.Path, gwEach...)
		}
		if err := f.endRound(ctx, asker, round); err != nil {
			return nil, err
		}
	}
	return []Row{last, each}, nil
}

// fanOut is one FanOut measurement's state.
type fanOut struct {
	rig   *Rig
	cfg   FanOutConfig
	kind  string // names its Sessions and raw subjects apart from another FanOut's
	sids  []string
	index map[string]int // Session id → its place in sids

	// published[s] is when Session s's message of the round went out, as
	// Unix ns; expect[s] is the id that message carries. arrivals collects
	// what reached each Client, and when.
	published []atomic.Int64
	mu        sync.Mutex
	expect    map[int]string
	arrivals  []arrival
	strays    []string  // messages a round did not send, or sent twice to a Client
	arrived   countdown // the round's deliveries
	cancelled countdown // the round's cancel frames

	rawSubj []string
	conns   []*nats.Conn // closed when the measurement ends
}

// arrival is one message reaching Client (connection) client.
type arrival struct {
	client, session int
	id              string
	at              int64
}

// dial opens a connection on role's credentials that lives as long as
// the measurement.
func (f *fanOut) dial(role auth.Role, part string) (*nats.Conn, jetstream.JetStream, error) {
	nc, js, err := f.rig.dial(role, part)
	if err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	f.conns = append(f.conns, nc)
	f.mu.Unlock()
	return nc, js, nil
}

func (f *fanOut) close() {
	for _, nc := range f.conns {
		nc.Close()
	}
}

// serveGateway runs a gateway on a loopback port until stop, as a gateway
// process does: its answerer and its server on one connection on the
// gateway's credentials. Client i's token is fanOutToken(i), granting the
// Sessions it watches.
func (f *fanOut) serveGateway(ctx context.Context) (wsURL string, stop func(), err error) {
	nc, js, err := f.dial(auth.Gateway, "fanout-gateway")
	if err != nil {
		return "", nil, err
	}
	grants := make(map[string]gateway.Grant, f.cfg.connections())
	for i := range f.cfg.connections() {
		g := gateway.Grant{User: "bench-" + strconv.Itoa(i)}
		for _, s := range f.cfg.watched(i) {
			g.Sessions = append(g.Sessions, f.sids[s])
		}
		grants[f.token(i)] = g
	}
	tokens, err := gateway.NewTokens(grants)
	if err != nil {
		return "", nil, err
	}
	ans, err := answerer.New(nc, answerer.Config{Log: f.rig.log})
	if err != nil {
		return "", nil, err
	}
	srv, err := gateway.New(gateway.Config{
		NATS: nc, JetStream: js, Tokens: tokens, Logger: f.rig.log,
		Services: []gateway.Service{gateway.UserQuestions(ans), gateway.Sessions()},
	})
	if err != nil {
		ans.Close()
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ans.Close()
		return "", nil, holdover.Wrap(err, holdover.CodeInternal, "listen for the gateway")
	}
	serving, end := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(serving, ln, func() {})
	}()
	return "ws://" + ln.Addr().String() + "/ws", func() {
		end()
		<-done
		ans.Close()
	}, nil
}

// token is Client i's access token. The gateway listens on loopback only
// and lives as long as one FanOut.
func (f *fanOut) token(i int) string {
	return "holdover-bench-" + f.rig.run + "-" + f.kind + "-" + strconv.Itoa(i)
}

// openClients dials every Client, says hello, watches its Sessions and
// waits until every watch is live.
func (f *fanOut) openClients(ctx context.Context, wsURL string) error {
	f.published = make([]atomic.Int64, f.cfg.Sessions)
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, 50) // dials at once
		mu    sync.Mutex
		first error
	)
	for i := range f.cfg.connections() {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := f.openClient(ctx, wsURL, i); err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

func (f *fanOut) openClient(ctx context.Context, wsURL string, client int) error {
	dial, cancel := context.WithTimeout(ctx, fanOutPatience)
	defer cancel()
	ws, _, err := websocket.Dial(dial, wsURL+"?token="+f.token(client), nil)
	if err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "dial the gateway")
	}
	ws.SetReadLimit(16 << 20)
	context.AfterFunc(ctx, func() { _ = ws.CloseNow() })
	sessions := f.cfg.watched(client)
	hello, _ := json.Marshal(map[string]any{"type": "hello", "protocol": f.cfg.Protocol, "client": "holdover-bench"})
	frames := [][]byte{hello}
	for k, s := range sessions {
		watch, _ := json.Marshal(map[string]any{"type": "watch", "id": "w" + strconv.Itoa(k), "session": f.sids[s], "fromSeq": 1})
		frames = append(frames, watch)
	}
	for _, frame := range frames {
		if err := ws.Write(dial, websocket.MessageText, frame); err != nil {
			return holdover.Wrap(err, holdover.CodeInternal, "say hello and watch")
		}
	}
	live := make(chan error, 1)
	go f.read(ws, client, len(sessions), live)
	select {
	case err := <-live:
		return err
	case <-dial.Done():
		return holdover.Newf(holdover.CodeInternal, "the watches of Client %d did not go live: %v", client, dial.Err())
	}
}

// clientFrame is what a measuring Client reads of a frame.
type clientFrame struct {
	Type    string `json:"type"`
	Session string `json:"session"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Payload struct {
		RequestID string `json:"requestId"`
	} `json:"payload"`
}

// read is a Client's read loop: it tells live when its watches are ready
// (or one failed) and records every request frame's arrival.
func (f *fanOut) read(ws *websocket.Conn, client, watches int, live chan<- error) {
	var buf bytes.Buffer
	ready := false
	for {
		_, r, err := ws.Reader(context.Background())
		if err != nil {
			if !ready {
				live <- holdover.Wrap(err, holdover.CodeInternal, "the gateway closed the connection before the watch was live")
			}
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			continue // the connection failed: the next Reader says so
		}
		at := time.Now().UnixNano()
		frames, err := messageFrames(buf.Bytes())
		if err != nil {
			f.stray(fmt.Sprintf("Client %d got a message that is neither a frame nor an array of them: %v", client, err))
			continue
		}
		for _, fr := range frames {
			switch fr.Type {
			case "ready":
				if watches--; watches == 0 && !ready {
					ready = true
					live <- nil
				}
			case "error":
				if !ready {
					ready = true
					live <- holdover.Newf(holdover.Code(fr.Code), "the gateway refused a watch: %s", fr.Message)
				}
			case "request":
				f.arrive(client, f.index[fr.Session], fr.Payload.RequestID, at)
			case "cancel":
				f.cancelled.done()
			}
		}
	}
}

// messageFrames reads the frames of one message: a JSON object, or from
// protocol 2 on an array of them (docs/protocol.md).
func messageFrames(data []byte) ([]clientFrame, error) {
	if len(data) > 0 && data[0] == '[' {
		var frames []clientFrame
		err := json.Unmarshal(data, &frames)
		return frames, err
	}
	var one clientFrame
	err := json.Unmarshal(data, &one)
	return []clientFrame{one}, err
}

// subscribeRaw opens a raw connection for each Client, subscribed to its
// Sessions' raw subjects, recording arrivals as the Clients do (once the
// message is read and decoded), and returns the connection that publishes
// to them.
func (f *fanOut) subscribeRaw() (*nats.Conn, error) {
	for s := range f.cfg.Sessions {
		f.rawSubj = append(f.rawSubj, "holdover.bench."+f.rig.run+"."+f.kind+"."+strconv.Itoa(s))
	}
	for client := range f.cfg.connections() {
		nc, _, err := f.dial(auth.Admin, "fanout-raw")
		if err != nil {
			return nil, err
		}
		for _, s := range f.cfg.watched(client) {
			if _, err := nc.Subscribe(f.rawSubj[s], func(m *nats.Msg) {
				at := time.Now().UnixNano()
				var req userquestions.WaterfallRequest
				if err := json.Unmarshal(m.Data, &req); err != nil {
					f.stray(fmt.Sprintf("a raw message that is not a request: %v", err))
					return
				}
				f.arrive(client, s, req.RequestID, at)
			}); err != nil {
				return nil, holdover.Wrap(err, holdover.CodeInternal, "subscribe a raw Client")
			}
		}
		if err := nc.FlushTimeout(10 * time.Second); err != nil {
			return nil, holdover.Wrap(err, holdover.CodeInternal, "subscribe a raw Client")
		}
	}
	pub, _, err := f.dial(auth.Admin, "fanout-raw-publisher")
	return pub, err
}

// rawRound publishes a request-sized message for each Session of batch
// to the raw subscribers.
func (f *fanOut) rawRound(ctx context.Context, pub *nats.Conn, round int, batch []int) (last time.Duration, each []time.Duration, err error) {
	msgs := make(map[int][]byte, len(batch))
	for _, s := range batch {
		if msgs[s], err = f.request("raw", round, s); err != nil {
			return 0, nil, err
		}
	}
	return f.round(ctx, "raw", round, batch, func(s int) error { return pub.Publish(f.rawSubj[s], msgs[s]) }, pub)
}

// gatewayRound publishes one request for each Session of batch where the
// question worker does, with a reply subject where outcomes would go
// (nobody settles: the Clients only read).
func (f *fanOut) gatewayRound(ctx context.Context, pub *nats.Conn, round int, batch []int) (last time.Duration, each []time.Duration, err error) {
	reqs := make(map[int][]byte, len(batch))
	subjects := make(map[int]string, len(batch))
	for _, s := range batch {
		if reqs[s], err = f.request("r", round, s); err != nil {
			return 0, nil, err
		}
		if subjects[s], err = streams.AskSubject(f.sids[s]); err != nil {
			return 0, nil, err
		}
	}
	reply := streams.OutcomePrefix + ".bench-" + f.rig.run + "."
	return f.round(ctx, "r", round, batch, func(s int) error {
		return pub.PublishRequest(subjects[s], reply+requestID("r", round, s), reqs[s])
	}, pub)
}

// request is the request of Session s in round, as the worker publishes
// it, under the id of its kind ("r" for the gateway, "raw" for the raw
// message of the same size).
func (f *fanOut) request(kind string, round, s int) ([]byte, error) {
	call := "c" + strconv.Itoa(round)
	data, err := json.Marshal(userquestions.WaterfallRequest{
		RequestID: requestID(kind, round, s), Session: f.sids[s], CallID: call,
		Questions: fanOutQuestions, Wait: &userquestions.WaitRef{CallID: call, Timed: true},
	})
	if err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "encode a request")
	}
	return data, nil
}

func requestID(kind string, round, s int) string {
	return kind + strconv.Itoa(round) + "-" + strconv.Itoa(s)
}

// fanOutQuestions is what each request asks: one question with two
// options, the size of a typical request frame.
var fanOutQuestions = []holdover.Question{{
	ID: "db", Question: "Which database should the new service use?", Header: "Database",
	Options: []holdover.Option{{Label: "PostgreSQL (Recommended)", Description: "the team knows it"}, {Label: "SQLite"}},
}}

// round times one publish for each Session of batch: from the first
// publish to the last arrival, and each arrival from its Session's
// publish. It fails unless every Client watching a Session of batch read
// its message once, and nothing else arrived.
func (f *fanOut) round(ctx context.Context, kind string, round int, batch []int, publish func(s int) error, pub *nats.Conn) (time.Duration, []time.Duration, error) {
	n := len(batch) * f.cfg.Clients
	f.mu.Lock()
	f.arrivals = f.arrivals[:0]
	f.expect = make(map[int]string, len(batch))
	for _, s := range batch {
		f.expect[s] = requestID(kind, round, s)
	}
	f.mu.Unlock()
	f.arrived.start(n)
	start := time.Now()
	for _, s := range batch {
		f.published[s].Store(time.Now().UnixNano())
		if err := publish(s); err != nil {
			return 0, nil, holdover.Wrap(err, holdover.CodeInternal, "publish")
		}
	}
	if err := pub.FlushTimeout(10 * time.Second); err != nil {
		return 0, nil, holdover.Wrap(err, holdover.CodeInternal, "publish")
	}
	if err := f.arrived.wait(ctx, "every Client to read its request"); err != nil {
		return 0, nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.strays) > 0 {
		return 0, nil, holdover.Newf(holdover.CodeInternal, "%d messages went astray, the first: %s", len(f.strays), f.strays[0])
	}
	got := make(map[[2]int]bool, n)
	var last int64
	each := make([]time.Duration, 0, n)
	for _, a := range f.arrivals {
		got[[2]int{a.client, a.session}] = true
		last = max(last, a.at)
		each = append(each, time.Duration(a.at-f.published[a.session].Load()))
	}
	for client := range f.cfg.connections() {
		for _, s := range f.cfg.watched(client) {
			if _, asked := f.expect[s]; asked && !got[[2]int{client, s}] {
				return 0, nil, holdover.Newf(holdover.CodeInternal, "Client %d never read request %s of %s", client, f.expect[s], f.sids[s])
			}
		}
	}
	return time.Duration(last - start.UnixNano()), each, nil
}

// arrive records that message id of Session s reached Client client at
// at; one the round did not send is a stray, and not counted.
func (f *fanOut) arrive(client, s int, id string, at int64) {
	f.mu.Lock()
	want := f.expect[s]
	if want != id {
		f.strays = append(f.strays, fmt.Sprintf("Client %d read %q of %s while the round sent %q", client, id, f.sids[s], want))
	} else {
		f.arrivals = append(f.arrivals, arrival{client: client, session: s, id: id, at: at})
	}
	f.mu.Unlock()
	if want == id {
		f.arrived.done()
	}
}

// stray records something a Client read that no round sent.
func (f *fanOut) stray(what string) {
	f.mu.Lock()
	f.strays = append(f.strays, what)
	f.mu.Unlock()
}

// endRound sends the cancel notice of every request of the round, as the
// worker does when one is answered, and waits until every Client has it.
func (f *fanOut) endRound(ctx context.Context, pub *nats.Conn, round int) error {
	f.cancelled.start(f.cfg.Sessions * f.cfg.Clients)
	for s, sid := range f.sids {
		subject, err := streams.CancelSubject(sid)
		if err != nil {
			return err
		}
		data, err := json.Marshal(userquestions.CancelNotice{RequestID: requestID("r", round, s), CallID: "c" + strconv.Itoa(round), Reason: userquestions.ReasonAnswered})
		if err != nil {
			return holdover.Wrap(err, holdover.CodeInternal, "encode a cancel notice")
		}
		if err := pub.Publish(subject, data); err != nil {
			return holdover.Wrap(err, holdover.CodeInternal, "publish a cancel notice")
		}
	}
	return f.cancelled.wait(ctx, "every Client to be told its request ended")
}

// fanOutPatience bounds one round and one Client's start; a gateway that
// loses a frame fails the measurement instead of hanging it.
const fanOutPatience = time.Minute

// countdown waits for a known number of deliveries. One beyond them (a
// frame sent twice) is counted apart instead of breaking the count.
type countdown struct {
	mu    sync.Mutex
	left  int
	extra int
	zero  chan struct{}
}

func (c *countdown) start(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.left, c.zero = n, make(chan struct{})
}

func (c *countdown) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.left == 0:
		c.extra++
	case c.left == 1:
		c.left = 0
		close(c.zero)
	default:
		c.left--
	}
}

// wait returns once the count is down, or fails after fanOutPatience,
// or when ctx ends. A delivery beyond the count fails it too.
func (c *countdown) wait(ctx context.Context, what string) error {
	c.mu.Lock()
	zero := c.zero
	c.mu.Unlock()
	select {
	case <-zero:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(fanOutPatience):
		return holdover.Newf(holdover.CodeInternal, "waited %v for %s", fanOutPatience, what)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.extra > 0 {
		return holdover.Newf(holdover.CodeInternal, "%d more deliveries than sent while waiting for %s", c.extra, what)
	}
	return nil
}
