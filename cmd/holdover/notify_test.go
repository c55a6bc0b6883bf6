package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/notify"
	"github.com/holdover-dev/holdover/notify/notifytest"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
)

const notifyPatience = 30 * time.Second

// holdover dev --webhook posts the demo agent's question with a link
// that opens its card, this run's token included.
func TestDevNotifiesWebhooks(t *testing.T) {
	recv := notifytest.NewReceiver(t, notify.KeyHeader)
	startDev(t, "--webhook", recv.URL)
	got := recv.Await(t, notifyPatience, "the demo question", func(reqs []notifytest.Request) bool { return len(notifytest.Keys(reqs)) > 0 })
	var n notify.Notification
	require.NoError(t, json.Unmarshal(got[0].Body, &n))
	require.Equal(t, notify.KindQuestion, n.Kind)
	require.Equal(t, demoSession, n.Session)
	require.Equal(t, n.Key, got[0].Key)
	require.NotEmpty(t, n.Questions)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+/\?session=demo&token=[0-9a-f]{32}#/s/demo$`, n.Link)
}

// holdover notify follows a running system and posts Slack-style bodies
// for a question and its pending result; it stops cleanly when asked.
func TestNotifyCommand(t *testing.T) {
	url := startDev(t, "--no-demo")
	recv := notifytest.NewReceiver(t, notify.KeyHeader)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"notify", "--nats", url, "--webhook", recv.URL, "--format", "slack",
			"--web-url", "https://holdover.example/", "--metrics-addr", "127.0.0.1:0"}, &bytes.Buffer{}, &stderr)
	}()
	_, js := embeddedtest.Connect(t, url)
	require.Eventually(t, func() bool {
		_, err := js.Consumer(ctx, streams.SessionsStream, notify.DefaultDurable)
		return err == nil
	}, notifyPatience, 10*time.Millisecond, "holdover notify creates its consumer")
	sessions, err := js.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	s := steertest.NewSession(t, sessionlog.New(js, sessions), "s1")
	asked := s.Continued("call_1", steertest.Questions("db")) - 1 // nothing else writes

	got := recv.Await(t, notifyPatience, "a question and its pending", func(reqs []notifytest.Request) bool { return len(notifytest.Keys(reqs)) == 2 })
	require.Equal(t, []string{fmt.Sprintf("s1.call_1.%d.question", asked), fmt.Sprintf("s1.call_1.%d.pending", asked)},
		[]string{got[0].Key, got[1].Key})
	var body map[string]string
	require.NoError(t, json.Unmarshal(got[0].Body, &body))
	require.True(t, strings.HasPrefix(body["text"], "*New question* in Session `s1`, answer by "), body["text"])
	require.Contains(t, body["text"], "<https://holdover.example/?session=s1#/s/s1|Open the card>")
	cancel()
	require.Equal(t, 0, <-done, stderr.String())
	assert.Contains(t, stderr.String(), "msg=stopped component=notify")
}

// Bad flags are refused before anything runs, and a webhook's path never
// shows in what is printed.
func TestNotifyCommandErrors(t *testing.T) {
	t.Setenv("HOLDOVER_NOTIFY_WEBHOOKS", "")
	code, _, stderr := cli(t, "notify")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "name at least one --webhook")

	env := embeddedtest.Start(t, streams.Config{Memory: true})
	nats := env.Server.ClientURL()
	code, _, stderr = cli(t, "notify", "--nats", nats, "--webhook", "ftp://hooks.example/T0/secret")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "ftp://hooks.example: want an http or https URL")
	assert.NotContains(t, stderr, "secret")
	code, _, stderr = cli(t, "notify", "--nats", nats, "--webhook", "https://hooks.example/x", "--format", "xml")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `notification format "xml": want json or slack`)
	code, _, stderr = cli(t, "notify", "--nats", nats, "--webhook", "https://hooks.example/x", "--web-url", "holdover.example")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "web UI address")

	bare, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(bare.Stop)
	code, _, stderr = cli(t, "notify", "--nats", bare.ClientURL(), "--webhook", "https://hooks.example/x")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no Holdover topology")
}
