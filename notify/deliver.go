package notify

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/ops"
)

// RetryPolicy bounds the attempts at delivering one notification to one
// webhook. A zero field takes its value from [DefaultRetry].
type RetryPolicy struct {
	// Attempts is the most POSTs of one notification to one webhook
	// before it is dead-lettered.
	Attempts int
	// First is the wait after the first failed attempt. It doubles
	// after each further failure.
	First time.Duration
	// Max caps one wait, a receiver's Retry-After included.
	Max time.Duration
	// Timeout bounds one attempt, its response body included.
	Timeout time.Duration
}

// DefaultRetry is what a zero field of a RetryPolicy stands for.
var DefaultRetry = RetryPolicy{Attempts: 8, First: 500 * time.Millisecond, Max: 30 * time.Second, Timeout: 10 * time.Second}

func (p RetryPolicy) withDefaults() RetryPolicy {
	p.Attempts = cmp.Or(p.Attempts, DefaultRetry.Attempts)
	p.First = cmp.Or(p.First, DefaultRetry.First)
	p.Max = cmp.Or(p.Max, DefaultRetry.Max)
	p.Timeout = cmp.Or(p.Timeout, DefaultRetry.Timeout)
	return p
}

// Backoff is the wait after failed attempt n (1 for the first): First
// doubled n-1 times, at most Max.
func (p RetryPolicy) Backoff(n int) time.Duration {
	p = p.withDefaults()
	d := p.First
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// poster delivers notifications to webhooks, waiting out its back-off on
// clock, and counts and logs what became of each.
type poster struct {
	client  *http.Client
	clock   clockwork.Clock
	policy  RetryPolicy
	metrics *notifyMetrics
	errors  *ops.Metrics
	log     *slog.Logger
}

// deliver posts data, notification n encoded for h, until h accepts it
// or the policy gives up on it, which dead-letters it: counted and logged
// with the error of every attempt. Either way its fate is settled and
// deliver returns nil. It returns ctx's error when ctx ended first: the
// notification is then neither delivered nor dead-lettered.
func (p *poster) deliver(ctx context.Context, h Webhook, n Notification, data []byte) error {
	var tries []error
	for attempt := 1; ; attempt++ {
		retryAfter, err := p.post(ctx, h, n.Key, data)
		if err == nil {
			p.metrics.delivered.WithLabelValues(string(n.Kind)).Inc()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		tries = append(tries, holdover.Wrapf(err, "", "attempt %d", attempt))
		if !retryable(err) || attempt >= p.policy.Attempts {
			p.deadLetter(h, n, errors.Join(tries...), attempt)
			return nil
		}
		wait := min(max(p.policy.Backoff(attempt), retryAfter), p.policy.Max)
		p.metrics.retried.WithLabelValues(string(n.Kind)).Inc()
		p.log.Warn("webhook delivery failed; retrying", "key", n.Key, "webhook", redacted(h.URL),
			"attempt", attempt, "retry_in", wait, "code", holdover.CodeOf(err), ops.Err(err))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.clock.After(wait):
		}
	}
}

func (p *poster) deadLetter(h Webhook, n Notification, chain error, attempts int) {
	err := holdover.Wrapf(chain, "", "notification %s to %s dead-lettered after %d attempts", n.Key, redacted(h.URL), attempts)
	p.metrics.deadLettered.WithLabelValues(string(n.Kind)).Inc()
	p.errors.Error("notify", err)
	p.log.Error("webhook delivery dead-lettered", "key", n.Key, "kind", n.Kind, "session", n.Session, "call", n.CallID,
		"webhook", redacted(h.URL), "attempts", attempts, "code", holdover.CodeOf(err), ops.Err(err))
}

// maxErrorBody is how much of a refusal's body an error quotes.
const maxErrorBody = 256

// post makes one attempt. A response other than 2xx is an error; when
// the receiver asks for a wait (Retry-After), post returns it.
func (p *poster) post(ctx context.Context, h Webhook, key string, data []byte) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, p.policy.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL.String(), bytes.NewReader(data))
	if err != nil {
		return 0, holdover.Wrapf(err, holdover.CodeBadRequest, "POST %s", redacted(h.URL))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "holdover-notify")
	req.Header.Set(KeyHeader, key)
	resp, err := p.client.Do(req)
	if err != nil {
		// A *url.Error repeats the whole URL, secret path and all.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, holdover.Wrapf(err, holdover.CodeInternal, "POST %s", redacted(h.URL))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // so the connection is reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return 0, nil
	}
	refusal := &statusError{status: resp.StatusCode, body: strings.TrimSpace(string(snippet))}
	code := holdover.CodeInternal
	if !refusal.retryable() {
		code = holdover.CodeBadRequest
	}
	return retryAfter(resp.Header.Get("Retry-After"), p.clock.Now()), holdover.Wrapf(refusal, code, "POST %s", redacted(h.URL))
}

// statusError is a response other than 2xx.
type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string {
	msg := fmt.Sprintf("answered %d %s", e.status, http.StatusText(e.status))
	if e.status >= 300 && e.status < 400 {
		msg += " (redirects are not followed: configure the address it redirects to)"
	}
	if e.body != "" {
		msg += ": " + strconv.Quote(e.body)
	}
	return msg
}

// retryable: a receiver that is down, overloaded or asked to slow down
// may take it later; any other refusal would be refused again.
func (e *statusError) retryable() bool {
	return e.status == http.StatusRequestTimeout || e.status == http.StatusTooManyRequests || e.status >= 500
}

// retryable reports whether another attempt may succeed: a failure to
// reach the receiver, a timeout, or a refusal that says so.
func retryable(err error) bool {
	var s *statusError
	if errors.As(err, &s) {
		return s.retryable()
	}
	return !holdover.HasCode(err, holdover.CodeBadRequest)
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
