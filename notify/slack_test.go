package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
)

// blockTexts returns the texts of one block: header text, section text and fields, context
// elements.
func blockTexts(t *testing.T, b slack.Block) []string {
	t.Helper()
	var out []string
	switch b := b.(type) {
	case *slack.HeaderBlock:
		out = append(out, b.Text.Text)
	case *slack.SectionBlock:
		if b.Text != nil {
			out = append(out, b.Text.Text)
		}
		for _, f := range b.Fields {
			out = append(out, f.Text)
		}
	case *slack.ContextBlock:
		for _, e := range b.ContextElements.Elements {
			if tb, ok := e.(*slack.TextBlockObject); ok {
				out = append(out, tb.Text)
			}
		}
	default:
		t.Errorf("unexpected block type %T", b)
	}
	return out
}

func TestSlackBlockKit(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	objs := provider("slack", sluicev1.AlertProviderSlack, rcv.url())
	p := objs[0].(*sluicev1.AlertProvider)
	p.Spec.Channel, p.Spec.Username = "#deploys", "release-bot"
	n := newNotifier(t, objs...)

	if err := n.Send(context.Background(), alertList(alert("team", "", "slack")), rollback()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	bodies := rcv.received()
	if len(bodies) != 1 {
		t.Fatalf("receiver got %d messages, want 1", len(bodies))
	}
	var got slack.WebhookMessage
	if err := json.Unmarshal(bodies[0], &got); err != nil {
		t.Fatalf("decoding %s: %v", bodies[0], err)
	}
	if got.Channel != "#deploys" || got.Username != "release-bot" {
		t.Errorf("channel, username = %q, %q; want #deploys, release-bot", got.Channel, got.Username)
	}
	if !strings.Contains(got.Text, "Rolled back: test/podinfo") || !strings.Contains(got.Text, "&lt;canary&gt;") {
		t.Errorf("fallback text = %q", got.Text)
	}
	if got.Blocks == nil || len(got.Blocks.BlockSet) != 4 {
		t.Fatalf("blocks = %s; want header, section, metric section, context", bodies[0])
	}
	wantTypes := []slack.MessageBlockType{slack.MBTHeader, slack.MBTSection, slack.MBTSection, slack.MBTContext}
	for i, b := range got.Blocks.BlockSet {
		if b.BlockType() != wantTypes[i] {
			t.Errorf("block %d is %s, want %s", i, b.BlockType(), wantTypes[i])
		}
	}
	if h := blockTexts(t, got.Blocks.BlockSet[0]); h[0] != "Rolled back: test/podinfo" {
		t.Errorf("header = %q", h[0])
	}

	// Each fact is a field "*Label*\nvalue" of the first section; the metric is in the second.
	facts := strings.Join(blockTexts(t, got.Blocks.BlockSet[1]), "|")
	for _, want := range []string{
		"Failed checks reached threshold 5 &lt;canary&gt;",
		"*Canary*\npodinfo", "*Namespace*\ntest", "*Phase*\nFailed", "*Weight*\n10%",
		"*Revision*\n5d8f9c7b6", "*Severity*\nerror",
	} {
		if !strings.Contains(facts, want) {
			t.Errorf("first section %q lacks %q", facts, want)
		}
	}
	metric := strings.Join(blockTexts(t, got.Blocks.BlockSet[2]), "|")
	for _, want := range []string{"request-success-rate", "*Value*\n97.5", "*Threshold*\n[99, +Inf]"} {
		if !strings.Contains(metric, want) {
			t.Errorf("metric section %q lacks %q", metric, want)
		}
	}
}

func TestSlackWithoutMetricOmitsMetricSection(t *testing.T) {
	msg := Message{Subject: podinfo(""), Event: EventPromoted, Severity: sluicev1.SeverityInfo}
	m := slackMessage(msg, "", DefaultUsername)
	if len(m.Blocks.BlockSet) != 3 {
		t.Fatalf("got %d blocks, want header, section, context", len(m.Blocks.BlockSet))
	}
	for _, f := range m.Blocks.BlockSet[1].(*slack.SectionBlock).Fields {
		if strings.HasSuffix(f.Text, "\n") { // Slack rejects empty texts: empty values show "-"
			t.Errorf("field %q has an empty value", f.Text)
		}
	}
}

func TestSlackServerErrorIsAnError(t *testing.T) {
	rcv := newReceiver(t, http.StatusInternalServerError)
	n := newNotifier(t, provider("slack", sluicev1.AlertProviderSlack, rcv.url())...)
	err := n.Send(context.Background(), alertList(alert("team", "", "slack")), rollback())
	if err == nil {
		t.Fatal("Send succeeded on a 500")
	}
	for _, want := range []string{`alert "team"`, "slack AlertProvider test/slack", "HTTP 500 Internal Server Error"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "SECRETTOKEN") {
		t.Errorf("error %q leaks the webhook URL", err)
	}
}

func TestSlackAnyTwoHundredIsSuccess(t *testing.T) {
	rcv := newReceiver(t, http.StatusNoContent)
	n := newNotifier(t, provider("slack", sluicev1.AlertProviderSlack, rcv.url())...)
	if err := n.Send(context.Background(), alertList(alert("team", "", "slack")), rollback()); err != nil {
		t.Fatalf("Send on a 204: %v", err)
	}
}

// TestSlackConnectionErrorHidesURL: slack-go's error quotes the URL; Send's must not, nor the
// address and port it dialed: it says the fixed reason.
func TestSlackConnectionErrorHidesURL(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	u := rcv.url()
	rcv.srv.Close()
	n := newNotifier(t, provider("slack", sluicev1.AlertProviderSlack, u)...)
	err := n.Send(context.Background(), alertList(alert("team", "", "slack")), rollback())
	if err == nil || !strings.HasSuffix(err.Error(), "Post request failed: "+egress.ReasonUnreachable) {
		t.Fatalf("Send = %v; want the fixed reason %q", err, egress.ReasonUnreachable)
	}
	host := strings.TrimPrefix(rcv.srv.URL, "http://")
	if strings.Contains(err.Error(), "SECRETTOKEN") || strings.Contains(err.Error(), "/services/") || strings.Contains(err.Error(), host) {
		t.Errorf("error %q leaks the webhook URL or the address", err)
	}
}
