package auth

import (
	"os"
	"path/filepath"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
)

// A tenant is two NATS accounts. Its data account holds the JetStream
// topology and no user; its clients account holds every role's user and
// no JetStream, and reaches the data through imports ([Crossings]).
//
// The split exists because the server publishes, on a client's behalf, to
// subjects the client chose: the reply subject of a direct get, a pull or
// any JetStream API request, where the server sends what it read or its
// answer. In one account such a reply can name a stream's subject, and the
// stream stores what the server sent (a direct get replying to
// $KV.userQuestions.<sid> writes that key), whatever the requester's own
// publish permissions say. A request that crosses an import arrives in
// the data account with its reply replaced by a one-time _R_ subject, so
// nothing the server answers there lands in a stream. Back in the clients
// account the answer is delivered to the subject the client chose, where
// no stream is; an import of that subject into the data account carries
// it on under its _R_ subject (usePub: the subject the message arrived
// on), not the chosen one, so it lands in no stream either. The rows of
// TestIndirectDenials show each stream untouched.
//
// The other way, only two kinds of subject cross: push consumers'
// deliveries to inboxes and JetStream's advisories. A push consumer whose
// deliver subject is anything else (a service subject, a stream's) finds
// no subscriber in the data account and delivers nothing.

// Crossing is one subject that crosses from the clients account to the
// data account (a service: requests and publishes into streams) or back
// (a stream: what the data account's JetStream publishes).
type Crossing struct {
	Subject string
	Stream  bool
	// Responses: a request may be answered by more than one message (a
	// pull's batch and heartbeats), each within the server's response
	// threshold of the one before; otherwise one reply ends it.
	Responses bool
	Why       string
}

// Crossings are every subject the clients account imports from its data
// account; nothing else passes between them.
func Crossings() []Crossing {
	out := []Crossing{
		{Subject: jsAPI + ">", Responses: true, Why: "the JetStream API, direct gets and pulls included"},
		{Subject: jsAck + ">", Why: "acknowledge delivered messages"},
		{Subject: jsFC + ">", Why: "answer a push consumer's flow control"},
		{Subject: kvKeys(streams.QuestionsBucket), Why: "write the projection"},
		{Subject: kvKeys(streams.RootsBucket), Why: "register live roots"},
		{Subject: streams.ClaimPrefix + ".>", Why: "send claims their frames"},
	}
	for _, s := range streams.SessionSubjects {
		out = append(out, Crossing{Subject: s, Why: "append to Session logs, inboxes and reply subjects"})
	}
	return append(out,
		Crossing{Subject: inboxRoot + ">", Stream: true, Why: "push consumers' deliveries, to an inbox only"},
		Crossing{Subject: advisories + ">", Stream: true, Why: "JetStream's consumer advisories"},
	)
}

// tenant loads or creates tenant name's data and clients accounts in
// folder and signs them: the data account exports every crossing to the
// clients account alone (an activation token for it), the clients account
// imports them.
func (s *Setup) tenant(folder, name string) (data, clients *entity, err error) {
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return nil, nil, holdover.Wrap(err, holdover.CodeInternal, "create account folder")
	}
	clientsKP, err := loadOrCreateKey(filepath.Join(folder, "clients.nk"), nkeys.CreateAccount)
	if err != nil {
		return nil, nil, err
	}
	clientsPub, _ := clientsKP.PublicKey()
	var imports jwt.Imports
	data, err = s.account(folder, "account.nk", name, func(kp nkeys.KeyPair, ac *jwt.AccountClaims) error {
		ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit, Streams: jwt.NoLimit, Consumer: int64(s.limits.MaxConsumers)}
		for _, c := range Crossings() {
			kind := jwt.Service
			if c.Stream {
				kind = jwt.Stream
			}
			e := &jwt.Export{Name: c.Why, Subject: jwt.Subject(c.Subject), Type: kind, TokenReq: true}
			if c.Responses {
				e.ResponseType = jwt.ResponseTypeStream
			}
			ac.Exports.Add(e)
			act := jwt.NewActivationClaims(clientsPub)
			act.ImportSubject = jwt.Subject(c.Subject)
			act.ImportType = kind
			token, err := act.Encode(kp)
			if err != nil {
				return holdover.Wrap(err, holdover.CodeInternal, "sign an activation")
			}
			imports.Add(&jwt.Import{Name: c.Why, Subject: jwt.Subject(c.Subject), Account: ac.Subject, Token: token, Type: kind})
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	clients, err = s.account(folder, "clients.nk", name+"-clients", func(_ nkeys.KeyPair, ac *jwt.AccountClaims) error {
		ac.Imports = imports
		return nil
	})
	return data, clients, err
}
