package worker

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/userquestions"
)

// The service speaks the micro protocol (`nats micro ls`, `info`, `stats`)
// with the micro package's own subjects and types, but serves them itself.
// micro counts a request, its error and its processing time around one
// call of its handler, which its subscription makes one at a time; a reply
// sent after the handler returned (every ask and askTimed reply, sent when
// its wait settles from whichever goroutine settled it) is neither timed
// nor counted as an error there, and a handler that waited for the reply
// would serve one request at a time. Here a request is counted when its
// reply goes out: its time is from arrival to reply (for a wait, how long
// the agent waited), and an error reply counts as an error, so the stats
// say what callers saw. A live wait still holds no goroutine.

// announcement is the service's micro identity and its endpoints' stats.
type announcement struct {
	nc *nats.Conn
	id string
	// admit says whether a control request (PING, INFO, STATS) came from
	// a process that may send it: the reply names any subject the sender
	// chose, and the worker may publish into the projection.
	admit func(what string, m *nats.Msg) bool

	mu      sync.Mutex
	started time.Time
	info    micro.Info
	stats   map[string]*micro.EndpointStats // by endpoint name
	subs    []*nats.Subscription
}

func newAnnouncement(nc *nats.Conn, admit func(what string, m *nats.Msg) bool) *announcement {
	return &announcement{nc: nc, id: nuid.Next(), admit: admit, stats: make(map[string]*micro.EndpointStats)}
}

func (a *announcement) identity() micro.ServiceIdentity {
	return micro.ServiceIdentity{Name: userquestions.Name, ID: a.id, Version: userquestions.Version, Metadata: map[string]string{}}
}

// start subscribes the endpoints (each served by handler(ep)) and then the
// PING, INFO and STATS control subjects, and waits until the server has
// them all: a request from another connection right after start finds them.
func (a *announcement) start(ctx context.Context, eps []endpoint, handler func(endpoint) nats.MsgHandler) error {
	a.mu.Lock()
	a.started = time.Now().UTC()
	a.info = micro.Info{ServiceIdentity: a.identity(), Type: micro.InfoResponseType, Description: userquestions.Description}
	a.mu.Unlock()
	for _, ep := range eps {
		subject := userquestions.Subject(ep.name)
		group := queueGroup
		var sub *nats.Subscription
		var err error
		if ep.fanOut {
			group = ""
			sub, err = a.nc.Subscribe(subject, handler(ep))
		} else {
			sub, err = a.nc.QueueSubscribe(subject, group, handler(ep))
		}
		if err != nil {
			a.stop()
			return holdover.Wrapf(err, holdover.CodeInternal, "add endpoint %s", ep.name)
		}
		a.mu.Lock()
		a.subs = append(a.subs, sub)
		a.info.Endpoints = append(a.info.Endpoints, micro.EndpointInfo{Name: ep.name, Subject: subject, QueueGroup: group})
		a.stats[ep.name] = &micro.EndpointStats{Name: ep.name, Subject: subject, QueueGroup: group}
		a.mu.Unlock()
	}
	for verb, body := range map[micro.Verb]func() any{
		micro.PingVerb:  func() any { return micro.Ping{ServiceIdentity: a.identity(), Type: micro.PingResponseType} },
		micro.InfoVerb:  func() any { return a.infoNow() },
		micro.StatsVerb: func() any { return a.statsNow() },
	} {
		// Every micro service answers on three subjects per verb: all
		// services, all of this name, and this instance.
		for _, target := range [][2]string{{"", ""}, {userquestions.Name, ""}, {userquestions.Name, a.id}} {
			subject, err := micro.ControlSubject(verb, target[0], target[1])
			if err == nil {
				var sub *nats.Subscription
				sub, err = a.nc.Subscribe(subject, func(m *nats.Msg) {
					if !a.admit(verb.String(), m) {
						return
					}
					data, _ := json.Marshal(body()) // the micro types always encode
					_ = m.Respond(data)
				})
				a.mu.Lock()
				a.subs = append(a.subs, sub)
				a.mu.Unlock()
			}
			if err != nil {
				a.stop()
				return holdover.Wrapf(err, holdover.CodeInternal, "announce %s service", userquestions.Name)
			}
		}
	}
	if err := userquestions.Flush(ctx, a.nc); err != nil {
		a.stop()
		return holdover.Wrapf(err, holdover.CodeInternal, "announce %s service", userquestions.Name)
	}
	return nil
}

// stop ends the endpoints and the announcement.
func (a *announcement) stop() {
	a.mu.Lock()
	subs := a.subs
	a.subs = nil
	a.mu.Unlock()
	for _, sub := range subs {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
	}
}

// record counts one request of endpoint op whose reply went out took after
// it arrived, with err when the reply was an error.
func (a *announcement) record(op string, took time.Duration, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.stats[op]
	if st == nil {
		return // refused before the endpoints were announced
	}
	st.NumRequests++
	st.ProcessingTime += took
	st.AverageProcessingTime = st.ProcessingTime / time.Duration(st.NumRequests)
	if err != nil {
		st.NumErrors++
		st.LastError = string(holdover.Wire(err).Code) + ": " + holdover.Wire(err).Message
	}
}

func (a *announcement) infoNow() micro.Info {
	a.mu.Lock()
	defer a.mu.Unlock()
	info := a.info
	info.Endpoints = append([]micro.EndpointInfo(nil), a.info.Endpoints...)
	return info
}

func (a *announcement) statsNow() micro.Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := micro.Stats{ServiceIdentity: a.identity(), Type: micro.StatsResponseType, Started: a.started, Endpoints: []*micro.EndpointStats{}}
	for _, ep := range a.info.Endpoints {
		st := *a.stats[ep.Name]
		out.Endpoints = append(out.Endpoints, &st)
	}
	return out
}
