// Package notifyproc assembles the notifier, shared by `holdover notify`
// and `holdover dev --webhook` so both run exactly the same thing.
//
// It only wires parts together; what a notification is and how it is
// delivered lives in package notify.
package notifyproc

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover/notify"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// DefaultMetricsAddr serves a notifier's metrics on loopback only, beside
// the question worker's 9464.
const DefaultMetricsAddr = "127.0.0.1:9466"

// WebhooksEnv lists webhook URLs, separated by spaces, for a process that
// should not show them in its command line (an incoming webhook's URL is
// its secret).
const WebhooksEnv = "HOLDOVER_NOTIFY_WEBHOOKS"

// Config is what a notifier's flags say.
type Config struct {
	// Webhooks are the URLs to post to, all in Format.
	Webhooks URLs
	Format   string
	// WebURL is the web UI address card links start from; "" for none.
	WebURL string
	// Notify tunes the notifier; its Webhooks and WebURL come from the
	// fields above.
	Notify notify.Config
}

// URLs is a repeatable URL flag.
type URLs []string

// String shows nothing: the flag package prints it as the default in
// the help, and a webhook's URL is its secret.
func (u *URLs) String() string { return "" }

// Set adds one URL.
func (u *URLs) Set(v string) error {
	*u = append(*u, v)
	return nil
}

// RegisterWebhookFlags adds --webhook (repeatable) and the format flag,
// named format, to fs: what `holdover dev` offers.
func (c *Config) RegisterWebhookFlags(fs *flag.FlagSet, format string) {
	c.registerWebhookFlags(fs, format, "")
}

func (c *Config) registerWebhookFlags(fs *flag.FlagSet, format, more string) {
	fs.Var(&c.Webhooks, "webhook", "URL to post a notification to for each new and each pending question (repeatable)"+more)
	fs.StringVar(&c.Format, format, string(notify.FormatJSON), "body of the notifications: json (the notification) or slack ({\"text\": …}, for chat incoming webhooks)")
}

// RegisterFlags adds every notifier flag to fs: what `holdover notify`
// offers. Webhooks named in HOLDOVER_NOTIFY_WEBHOOKS come first.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Webhooks = append(c.Webhooks, strings.Fields(os.Getenv(WebhooksEnv))...)
	c.registerWebhookFlags(fs, "format", "; more in env "+WebhooksEnv+", separated by spaces")
	fs.StringVar(&c.WebURL, "web-url", "", "address of the web UI the card links start from, e.g. https://holdover.example/ (empty: no link)")
	fs.StringVar(&c.Notify.Durable, "durable", notify.DefaultDurable, "name of the consumer on SESSIONS; notifiers with one name split the events, another name sees every event again")
	fs.DurationVar(&c.Notify.AckWait, "ack-wait", notify.DefaultAckWait, "how long the events of a notifier that died wait before another (or its restart) takes them")
	retry := notify.DefaultRetry
	fs.IntVar(&c.Notify.Retry.Attempts, "attempts", retry.Attempts, "most POSTs of one notification to one webhook before it is dead-lettered")
	fs.DurationVar(&c.Notify.Retry.First, "retry-first", retry.First, "wait after the first failed attempt; it doubles after each further one")
	fs.DurationVar(&c.Notify.Retry.Max, "retry-max", retry.Max, "longest wait between attempts, a receiver's Retry-After included")
	fs.DurationVar(&c.Notify.Retry.Timeout, "timeout", retry.Timeout, "time one attempt may take, its response included")
}

// Component returns the notifier as one component of [ops.Run], posting
// through js's connection (which the process runs as a component of its
// own, [ops.NATSConnection]). It opens the SESSIONS stream and the
// userQuestions bucket as a question worker provisioned them; it never
// provisions (a notifier must not change a deployment's streams).
func Component(ctx context.Context, js jetstream.JetStream, cfg Config) (ops.Component, error) {
	ncfg := cfg.Notify
	format, err := notify.ParseFormat(cfg.Format)
	if err != nil {
		return ops.Component{}, err
	}
	for _, raw := range cfg.Webhooks {
		h, err := notify.ParseWebhook(raw, format)
		if err != nil {
			return ops.Component{}, err
		}
		ncfg.Webhooks = append(ncfg.Webhooks, h)
	}
	if ncfg.WebURL, err = notify.ParseWebURL(cfg.WebURL); err != nil {
		return ops.Component{}, err
	}
	sessions, err := js.Stream(ctx, streams.SessionsStream)
	var questions jetstream.KeyValue
	if err == nil {
		questions, err = js.KeyValue(ctx, streams.QuestionsBucket)
	}
	if err != nil {
		return ops.Component{}, fmt.Errorf("no Holdover topology (start a question-worker or `holdover dev` first): %w", err)
	}
	n, err := notify.New(js, sessions, questions, ncfg)
	if err != nil {
		return ops.Component{}, err
	}
	return ops.Component{Name: "notify", Run: n.Run}, nil
}
