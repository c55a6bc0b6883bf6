package notify

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/holdover-dev/holdover"
)

// Format is the body shape a webhook receives.
type Format string

const (
	// FormatJSON posts the [Notification] itself.
	FormatJSON Format = "json"
	// FormatSlack posts {"text": …}, a line of Slack mrkdwn with the
	// questions and the card link: the body Slack's incoming webhooks
	// take, and Mattermost's and Rocket.Chat's.
	FormatSlack Format = "slack"
)

// ParseFormat reads a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatJSON, FormatSlack:
		return f, nil
	}
	return "", holdover.Newf(holdover.CodeBadRequest, "notification format %q: want %s or %s", s, FormatJSON, FormatSlack)
}

// Webhook is one receiver: every notification is posted to it.
type Webhook struct {
	URL    *url.URL
	Format Format
}

// ParseWebhook checks that raw is an absolute http or https URL.
func ParseWebhook(raw string, f Format) (Webhook, error) {
	u, err := parseHTTPURL(raw)
	if err != nil {
		return Webhook{}, holdover.Wrap(err, holdover.CodeBadRequest, "webhook")
	}
	if _, err := ParseFormat(string(f)); err != nil {
		return Webhook{}, err
	}
	return Webhook{URL: u, Format: f}, nil
}

// ParseWebURL checks the base address of the web UI that card links
// start from; "" means notifications carry no link.
func ParseWebURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, nil
	}
	u, err := parseHTTPURL(raw)
	if err != nil {
		return nil, holdover.Wrap(err, holdover.CodeBadRequest, "web UI address")
	}
	return u, nil
}

func parseHTTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, holdover.Newf(holdover.CodeBadRequest, "%q is not a URL", redactRaw(raw))
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, holdover.Newf(holdover.CodeBadRequest, "%s: want an http or https URL", redacted(u))
	case u.Host == "":
		return nil, holdover.Newf(holdover.CodeBadRequest, "%s names no host", redacted(u))
	}
	return u, nil
}

// redacted is what logs and errors show of a webhook: scheme and host.
// The path and query of an incoming webhook are its secret.
func redacted(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// redactRaw cuts an unparsable URL after its host, for the same reason.
func redactRaw(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "(unparsable)"
	}
	host, _, _ := strings.Cut(rest, "/")
	return scheme + "://" + host
}

// body encodes n in format f.
func body(n Notification, f Format) ([]byte, error) {
	var v any = n
	if f == FormatSlack {
		v = struct {
			Text string `json:"text"`
		}{slackText(n)}
	}
	// Links keep their '&': the HTML escaping json.Marshal does would
	// show as \u0026 to whoever reads the body.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "encode notification %s", n.Key)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// slackText is n as one message of Slack mrkdwn: what happened, where,
// each question on a line, and the card link.
func slackText(n Notification) string {
	var b strings.Builder
	switch n.Kind {
	case KindQuestion:
		fmt.Fprintf(&b, "*New question* in Session `%s`", n.Session)
		switch {
		case n.Deadline != nil:
			fmt.Fprintf(&b, ", answer by %s", n.Deadline.UTC().Format(time.TimeOnly+" MST"))
		case n.Blocking:
			b.WriteString(", the agent waits for the answer")
		}
	case KindPending:
		fmt.Fprintf(&b, "*Question went pending* in Session `%s`: the agent went on without the answer, which it still takes", n.Session)
	}
	for _, q := range n.Questions {
		b.WriteString("\n• ")
		b.WriteString(slackEscape(cmp.Or(q.Question, q.ID)))
	}
	if n.Link != "" {
		fmt.Fprintf(&b, "\n<%s|Open the card>", n.Link)
	}
	return b.String()
}

// slackEscape escapes the three characters Slack reads as markup in a
// message's text, so a question cannot inject a link or a mention.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
