package notify

import (
	"context"
	"errors"
	"strings"

	"github.com/slack-go/slack"

	"sluice.dev/sluice/egress"
)

// Block Kit text limits.
const (
	slackHeaderMax   = 150
	slackTextMax     = 3000
	slackFieldMax    = 2000
	slackFallbackMax = 3000
)

// postSlack posts msg through slack-go's incoming-webhook API. slack-go accepts only 200; any other
// 2xx answer is also treated as success here.
func (n *Notifier) postSlack(ctx context.Context, t target, msg Message) error {
	err := slack.PostWebhookCustomHTTPContext(ctx, t.address, t.client, slackMessage(msg, t.spec.Channel, t.username))
	var sce slack.StatusCodeError
	if errors.As(err, &sce) {
		if sce.Code >= 200 && sce.Code <= 299 {
			return nil
		}
		return errors.New(egress.StatusMessage(sce.Code))
	}
	return err
}

// slackMessage builds the Block Kit message: a header (event, namespace/name), a section with the
// text and the subject's fields (subjectFacts), a section with
// the failing metric (value and threshold) when there is one, and a context line with the
// event name. Text is the plain-text fallback shown in notifications.
func slackMessage(msg Message, channel, username string) *slack.WebhookMessage {
	blocks := []slack.Block{
		slack.NewHeaderBlock(plain(truncate(msg.title(), slackHeaderMax))),
		slack.NewSectionBlock(
			mrkdwn(truncate(slackEscape(orDash(msg.Text)), slackTextMax)),
			slackFields(subjectFacts(msg)), nil),
	}
	if m := msg.Metric; m != nil {
		blocks = append(blocks, slack.NewSectionBlock(
			mrkdwn(truncate("*Failing metric:* "+slackEscape(orDash(m.Name)), slackTextMax)),
			[]*slack.TextBlockObject{
				slackField("Value", m.Value),
				slackField("Threshold", m.ThresholdRange),
			}, nil))
	}
	blocks = append(blocks, slack.NewContextBlock("",
		mrkdwn("sluice · event "+slackEscape(string(msg.Event)))))

	return &slack.WebhookMessage{
		Channel:  channel,
		Username: username,
		Text:     truncate(slackEscape(msg.summary()), slackFallbackMax),
		Blocks:   &slack.Blocks{BlockSet: blocks},
	}
}

// slackField is a two-line mrkdwn field: a bold label above the value ("-" when empty).
func slackField(label, value string) *slack.TextBlockObject {
	return mrkdwn(truncate("*"+label+"*\n"+slackEscape(orDash(value)), slackFieldMax))
}

// slackFields turns labelled values into fields.
func slackFields(facts [][2]string) []*slack.TextBlockObject {
	out := make([]*slack.TextBlockObject, len(facts))
	for i, f := range facts {
		out[i] = slackField(f[0], f[1])
	}
	return out
}

func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

// slackEscaper escapes the three characters Slack's mrkdwn gives a meaning to (links, mentions).
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }
