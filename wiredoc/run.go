package wiredoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultPatience is how long a MSG waits for its message.
const DefaultPatience = 20 * time.Second

// Runner plays transcripts one step after another, each on the
// connection of the role the last AS named (so every step is checked
// against that role's permissions too), keeping its subscriptions, bound
// placeholders and role from one block to the next, as a document's
// examples build on each other. A MSG takes its message from any role's
// subscription.
type Runner struct {
	connect func(role string) (*nats.Conn, error)
	conns   map[string]*nats.Conn
	role    string
	nc      *nats.Conn
	// Patience bounds the wait of a MSG for its message.
	Patience time.Duration
	// Vars are the placeholders bound so far; a caller may bind some first.
	Vars Vars
	// Observe, when set, is shown every message a PUB sends (sent true)
	// and every message a MSG matched, as it went over the wire: a test
	// can check them against more than the example, such as schemas.
	Observe func(m *nats.Msg, sent bool) error

	mu      sync.Mutex
	arrived chan struct{} // closed and replaced whenever a message arrives
	subs    []*subscription
}

// subscription keeps every message of one SUB until a MSG takes it.
type subscription struct {
	subject string
	role    string
	sub     *nats.Subscription
	msgs    []*nats.Msg // guarded by Runner.mu; a taken message is nil
}

// NewRunner returns a Runner whose steps run on nc until an AS names a
// role, and on connect(role)'s connection (opened once per role) after.
func NewRunner(nc *nats.Conn, connect func(role string) (*nats.Conn, error)) *Runner {
	return &Runner{nc: nc, connect: connect, conns: map[string]*nats.Conn{}, Patience: DefaultPatience, Vars: Vars{}, arrived: make(chan struct{})}
}

// Close drops every subscription the transcripts made.
func (r *Runner) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.subs {
		_ = s.sub.Unsubscribe()
	}
	r.subs = nil
}

// Run plays steps in order and returns the first departure from them,
// naming its line.
func (r *Runner) Run(steps []Step) error {
	for _, s := range steps {
		if err := r.step(s); err != nil {
			return fmt.Errorf("line %d: %s: %w", s.Line, s, err)
		}
	}
	return nil
}

func (r *Runner) step(s Step) error {
	switch s.Verb {
	case As:
		return r.as(s.Subject)
	case Sub:
		return r.subscribe(s)
	case Unsub:
		return r.unsubscribe(s)
	case Pub:
		return r.publish(s)
	case Msg:
		return r.expect(s)
	}
	return fmt.Errorf("unknown verb")
}

// as makes role's connection the one the next steps run on, after what
// the last one published reached the server: messages of two connections
// are not ordered otherwise.
func (r *Runner) as(role string) error {
	if err := r.nc.Flush(); err != nil {
		return err
	}
	nc := r.conns[role]
	if nc == nil {
		if r.connect == nil {
			return fmt.Errorf("the runner connects as no role")
		}
		var err error
		if nc, err = r.connect(role); err != nil {
			return fmt.Errorf("connect as %s: %w", role, err)
		}
		r.conns[role] = nc
	}
	r.role, r.nc = role, nc
	return nil
}

func (r *Runner) subscribe(s Step) error {
	subject, err := r.Vars.Fill(s.Subject)
	if err != nil {
		return err
	}
	entry := &subscription{subject: subject, role: r.role}
	deliver := func(m *nats.Msg) {
		r.mu.Lock()
		defer r.mu.Unlock()
		entry.msgs = append(entry.msgs, m)
		close(r.arrived)
		r.arrived = make(chan struct{})
	}
	if s.Arg != "" {
		entry.sub, err = r.nc.QueueSubscribe(subject, s.Arg, deliver)
	} else {
		entry.sub, err = r.nc.Subscribe(subject, deliver)
	}
	if err != nil {
		return err
	}
	_ = entry.sub.SetPendingLimits(-1, -1)
	r.mu.Lock()
	r.subs = append(r.subs, entry)
	r.mu.Unlock()
	// The server has the subscription before anything that relies on it.
	return r.nc.Flush()
}

func (r *Runner) unsubscribe(s Step) error {
	subject, err := r.Vars.Fill(s.Subject)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range r.subs {
		if e.subject == subject && e.role == r.role {
			r.subs = slices.Delete(r.subs, i, i+1)
			if err := e.sub.Unsubscribe(); err != nil {
				return err
			}
			return r.nc.Flush()
		}
	}
	return fmt.Errorf("no SUB %s to drop", subject)
}

func (r *Runner) publish(s Step) error {
	m := nats.NewMsg("")
	var err error
	if m.Subject, err = r.Vars.Fill(s.Subject); err != nil {
		return err
	}
	if m.Reply, err = r.Vars.Fill(s.Arg); err != nil {
		return err
	}
	for _, h := range s.Headers {
		v, err := r.Vars.Fill(h.Value)
		if err != nil {
			return err
		}
		m.Header.Add(h.Name, v)
	}
	body, err := r.Vars.Fill(s.Body)
	if err != nil {
		return err
	}
	m.Data = []byte(body)
	if isJSON(body) {
		// Sent as written, without the white space of a pretty example.
		var compact bytes.Buffer
		if err := json.Compact(&compact, m.Data); err != nil {
			return fmt.Errorf("the body is not JSON: %w", err)
		}
		m.Data = compact.Bytes()
	}
	if r.Observe != nil {
		if err := r.Observe(m, true); err != nil {
			return err
		}
	}
	return r.nc.PublishMsg(m)
}

// expect waits for the message s describes and checks it. The message
// is the first one not yet taken, on any subscription, whose subject and
// reply match; it must then match the headers and body too.
func (r *Runner) expect(s Step) error {
	deadline := time.NewTimer(r.Patience)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		m, vars := r.take(s)
		arrived := r.arrived
		r.mu.Unlock()
		if m != nil {
			if err := vars.check(s, m); err != nil {
				return fmt.Errorf("%w\n  the message: %s", err, describe(m))
			}
			maps.Copy(r.Vars, vars)
			if r.Observe != nil {
				return r.Observe(m, false)
			}
			return nil
		}
		select {
		case <-arrived:
		case <-deadline.C:
			return fmt.Errorf("no such message within %s%s", r.Patience, r.pending())
		}
	}
}

// take removes and returns the first waiting message whose subject and
// reply match s, with the placeholders bound so far plus those the match
// binds. The caller holds r.mu.
func (r *Runner) take(s Step) (*nats.Msg, Vars) {
	for _, e := range r.subs {
		for i, m := range e.msgs {
			if m == nil {
				continue
			}
			vars := maps.Clone(r.Vars)
			if !vars.matchText(s.Subject, m.Subject) || !vars.matchText(s.Arg, m.Reply) {
				continue
			}
			e.msgs[i] = nil
			return m, vars
		}
	}
	return nil, nil
}

// pending lists the messages no MSG took, to show what came instead.
func (r *Runner) pending() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, e := range r.subs {
		for _, m := range e.msgs {
			if m != nil {
				b.WriteString("\n  waiting untaken: " + describe(m))
			}
		}
	}
	return b.String()
}

// check compares m's headers and body with the example s, binding the
// placeholders they fill into v.
func (v Vars) check(s Step, m *nats.Msg) error {
	shown := map[string]bool{}
	for _, h := range s.Headers {
		shown[strings.ToLower(h.Name)] = true
		got := headerValues(m.Header, h.Name)
		if len(got) == 0 {
			return fmt.Errorf("the example has header %s: %s, the message has none", h.Name, h.Value)
		}
		if !v.matchText(h.Value, got[0]) {
			return fmt.Errorf("header %s: the example says %q, the message has %q", h.Name, h.Value, got[0])
		}
	}
	if !s.MoreHeaders {
		for _, name := range slices.Sorted(maps.Keys(m.Header)) {
			if !shown[strings.ToLower(name)] {
				return fmt.Errorf("the message has header %s: %s, which the example does not show", name, strings.Join(m.Header[name], ", "))
			}
		}
	}
	switch {
	case s.Body == "" && len(m.Data) == 0:
		return nil
	case isJSON(s.Body):
		want, err := exampleJSON(s.Body)
		if err != nil {
			return fmt.Errorf("the example's body is not JSON: %w", err)
		}
		got, err := decodeJSON(m.Data)
		if err != nil {
			return fmt.Errorf("the example's body is JSON, the message's is not: %q", m.Data)
		}
		return v.matchJSON(want, got, "")
	case !v.matchText(s.Body, string(m.Data)):
		return &mismatch{"", fmt.Sprintf("%q", s.Body), fmt.Sprintf("%q", m.Data)}
	}
	return nil
}

// headerValues looks a header up by its name as written, or in any case.
func headerValues(h nats.Header, name string) []string {
	if vs, ok := h[name]; ok {
		return vs
	}
	for k, vs := range h {
		if strings.EqualFold(k, name) {
			return vs
		}
	}
	return nil
}

// describe renders a message as a transcript MSG, for failure reports.
func describe(m *nats.Msg) string {
	var b strings.Builder
	b.WriteString("MSG " + m.Subject)
	if m.Reply != "" {
		b.WriteString(" " + m.Reply)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Header)) {
		for _, v := range m.Header[k] {
			b.WriteString(" | " + k + ": " + v)
		}
	}
	if len(m.Data) > 0 {
		b.WriteString(" | " + string(m.Data))
	}
	return b.String()
}
