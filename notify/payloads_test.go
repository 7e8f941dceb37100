package notify

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// The receivers decode into their own structs with the field names each service documents, so a
// wrong JSON tag in the sender fails here.

func sendTo(t *testing.T, typ sluicev1.AlertProviderType, msg Message) *receiver {
	t.Helper()
	rcv := newReceiver(t, http.StatusOK)
	objs := provider("p", typ, rcv.url())
	objs[0].(*sluicev1.AlertProvider).Spec.Username = "release-bot"
	n := newNotifier(t, objs...)
	if err := n.Send(context.Background(), alertList(alert("a", "", "p")), msg); err != nil {
		t.Fatalf("Send: %v", err)
	}
	return rcv
}

func TestGenericPayload(t *testing.T) {
	var got struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Phase     string `json:"phase"`
		Weight    int32  `json:"weight"`
		Revision  string `json:"revision"`
		Event     string `json:"event"`
		Severity  string `json:"severity"`
		Text      string `json:"text"`
		Metric    *struct {
			Name           string `json:"name"`
			Value          string `json:"value"`
			ThresholdRange string `json:"thresholdRange"`
		} `json:"metric"`
	}
	decodeOne(t, sendTo(t, sluicev1.AlertProviderGeneric, rollback()), &got)
	if got.Kind != "Canary" || got.Name != "podinfo" || got.Namespace != "test" || got.Phase != "Failed" || got.Weight != 10 ||
		got.Revision != "5d8f9c7b6" || got.Event != "RolledBack" || got.Severity != "error" ||
		got.Text != "Failed checks reached threshold 5 <canary>" {
		t.Errorf("payload = %+v", got)
	}
	if got.Metric == nil || got.Metric.Name != "request-success-rate" || got.Metric.Value != "97.5" ||
		got.Metric.ThresholdRange != "[99, +Inf]" {
		t.Errorf("metric = %+v", got.Metric)
	}
}

func TestDiscordPayload(t *testing.T) {
	var got struct {
		Content  string `json:"content"`
		Username string `json:"username"`
		Embeds   []struct {
			Title  string `json:"title"`
			Color  int    `json:"color"`
			Fields []struct {
				Name   string `json:"name"`
				Value  string `json:"value"`
				Inline bool   `json:"inline"`
			} `json:"fields"`
		} `json:"embeds"`
		AllowedMentions struct {
			Parse []string `json:"parse"`
		} `json:"allowed_mentions"`
	}
	decodeOne(t, sendTo(t, sluicev1.AlertProviderDiscord, rollback()), &got)
	if got.Username != "release-bot" || !strings.HasPrefix(got.Content, "Rolled back: test/podinfo") {
		t.Errorf("username, content = %q, %q", got.Username, got.Content)
	}
	if got.AllowedMentions.Parse == nil || len(got.AllowedMentions.Parse) != 0 {
		t.Errorf("allowed_mentions.parse = %v, want [] (no pings)", got.AllowedMentions.Parse)
	}
	if len(got.Embeds) != 1 || got.Embeds[0].Color != 0xE01E5A {
		t.Fatalf("embeds = %+v, want one red embed", got.Embeds)
	}
	fields := map[string]string{}
	for _, f := range got.Embeds[0].Fields {
		fields[f.Name] = f.Value
	}
	for k, v := range map[string]string{
		"Canary": "podinfo", "Namespace": "test", "Phase": "Failed", "Weight": "10%",
		"Revision": "5d8f9c7b6", "Failing metric": "request-success-rate", "Value": "97.5",
		"Threshold": "[99, +Inf]",
	} {
		if fields[k] != v {
			t.Errorf("field %s = %q, want %q", k, fields[k], v)
		}
	}
}

func TestMSTeamsPayload(t *testing.T) {
	var got struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string `json:"contentType"`
			Content     struct {
				Schema  string `json:"$schema"`
				Type    string `json:"type"`
				Version string `json:"version"`
				Body    []struct {
					Type   string `json:"type"`
					Text   string `json:"text"`
					Size   string `json:"size"`
					Weight string `json:"weight"`
					Color  string `json:"color"`
					Wrap   bool   `json:"wrap"`
					Facts  []struct {
						Title string `json:"title"`
						Value string `json:"value"`
					} `json:"facts"`
				} `json:"body"`
			} `json:"content"`
		} `json:"attachments"`
	}
	msg := rollback()
	msg.Severity, msg.Metric = sluicev1.SeverityWarn, nil
	decodeOne(t, sendTo(t, sluicev1.AlertProviderMSTeams, msg), &got)
	if got.Type != "message" || len(got.Attachments) != 1 ||
		got.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" {
		t.Fatalf("envelope = %+v", got)
	}
	card := got.Attachments[0].Content
	if card.Type != "AdaptiveCard" || card.Version == "" || len(card.Body) != 3 {
		t.Fatalf("card = %+v", card)
	}
	if card.Body[0].Text != "Rolled back: test/podinfo" || card.Body[0].Color != "Warning" {
		t.Errorf("title block = %+v", card.Body[0])
	}
	facts := map[string]string{}
	for _, f := range card.Body[2].Facts {
		facts[f.Title] = f.Value
	}
	if facts["Weight"] != "10%" || facts["Revision"] != "5d8f9c7b6" || facts["Severity"] != "warn" {
		t.Errorf("facts = %v", facts)
	}
	if _, ok := facts["Failing metric"]; ok {
		t.Error("a message without metric shows a failing metric")
	}
}
