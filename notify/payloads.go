package notify

import (
	"strconv"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// subjectFacts are the labelled values about the subject every card shows, in order: its kind
// and name, namespace (when namespaced), phase, weight (when it has one), revision, severity.
func subjectFacts(msg Message) [][2]string {
	kind := msg.Subject.Kind
	if kind == "" {
		kind = "Name"
	}
	f := [][2]string{{kind, msg.Subject.Name}}
	if msg.Subject.Namespace != "" {
		f = append(f, [2]string{"Namespace", msg.Subject.Namespace})
	}
	f = append(f, [2]string{"Phase", msg.Subject.Phase})
	if msg.Weight != nil {
		f = append(f, [2]string{"Weight", strconv.Itoa(int(*msg.Weight)) + "%"})
	}
	return append(f, [2]string{"Revision", msg.Revision}, [2]string{"Severity", string(msg.Severity)})
}

// facts are the labelled values every card shows, in order: the subject's, then the failing
// metric's when there is one.
func facts(msg Message) [][2]string {
	f := subjectFacts(msg)
	if m := msg.Metric; m != nil {
		f = append(f, [2]string{"Failing metric", m.Name}, [2]string{"Value", m.Value},
			[2]string{"Threshold", m.ThresholdRange})
	}
	for i := range f {
		f[i][1] = orDash(f[i][1])
	}
	return f
}

// GenericPayload is the JSON body a generic AlertProvider receives.
type GenericPayload struct {
	// Kind, Name and Namespace of the subject (Namespace empty when cluster-scoped).
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Phase of the subject after the transition.
	Phase string `json:"phase"`
	// Weight is a canary's share of traffic in percent (0–100); 0 for subjects without one.
	Weight int32 `json:"weight"`
	// Revision the run delivers.
	Revision string `json:"revision"`
	// Event is the transition's stable name, e.g. "RolledBack".
	Event Event `json:"event"`
	// Severity: info, warn or error.
	Severity sluicev1.AlertSeverity `json:"severity"`
	// Text is one line explaining the transition.
	Text string `json:"text"`
	// Metric is the failing metric, omitted when there is none.
	Metric *FailingMetric `json:"metric,omitempty"`
}

func genericPayload(msg Message) GenericPayload {
	return GenericPayload{
		Kind: msg.Subject.Kind, Name: msg.Subject.Name, Namespace: msg.Subject.Namespace, Phase: msg.Subject.Phase,
		Weight:   ptr.Deref(msg.Weight, 0),
		Revision: msg.Revision, Event: msg.Event, Severity: msg.Severity, Text: msg.Text,
		Metric: msg.Metric,
	}
}

// Discord limits (https://discord.com/developers/docs/resources/message#embed-object-embed-limits).
const (
	discordContentMax    = 2000
	discordTitleMax      = 256
	discordFieldValueMax = 1024
)

// discordMessage is the body of a Discord webhook execution.
type discordMessage struct {
	Content         string                 `json:"content"`
	Username        string                 `json:"username,omitempty"`
	Embeds          []discordEmbed         `json:"embeds,omitempty"`
	AllowedMentions discordAllowedMentions `json:"allowed_mentions"`
}

type discordEmbed struct {
	Title  string         `json:"title"`
	Color  int            `json:"color"`
	Fields []discordField `json:"fields"`
}

type discordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline"`
}

// discordAllowedMentions with an empty Parse list keeps "@everyone" in a message text from
// pinging anyone.
type discordAllowedMentions struct {
	Parse []string `json:"parse"`
}

// discordPayload: content is the one-line summary; one embed titled with the event carries the
// facts as inline fields, coloured by severity.
func discordPayload(msg Message, username string) discordMessage {
	e := discordEmbed{
		Title: truncate(msg.title(), discordTitleMax),
		Color: severityColor(msg.Severity),
	}
	for _, f := range facts(msg) {
		e.Fields = append(e.Fields, discordField{Name: f[0], Value: truncate(f[1], discordFieldValueMax), Inline: true})
	}
	return discordMessage{
		Content:         truncate(msg.summary(), discordContentMax),
		Username:        username,
		Embeds:          []discordEmbed{e},
		AllowedMentions: discordAllowedMentions{Parse: []string{}},
	}
}

// severityColor is an RGB colour per severity: blue info, amber warn, red error.
func severityColor(s sluicev1.AlertSeverity) int {
	switch s {
	case sluicev1.SeverityWarn:
		return 0xECB22E
	case sluicev1.SeverityError:
		return 0xE01E5A
	}
	return 0x36C5F0
}

// teamsMessage is the envelope Microsoft Teams incoming webhooks (Workflows) accept: a message
// with one Adaptive Card attachment.
type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string       `json:"contentType"`
	Content     adaptiveCard `json:"content"`
}

type adaptiveCard struct {
	Schema  string            `json:"$schema"`
	Type    string            `json:"type"`
	Version string            `json:"version"`
	Body    []adaptiveElement `json:"body"`
}

// adaptiveElement is a TextBlock or a FactSet.
type adaptiveElement struct {
	Type   string         `json:"type"`
	Text   string         `json:"text,omitempty"`
	Size   string         `json:"size,omitempty"`
	Weight string         `json:"weight,omitempty"`
	Color  string         `json:"color,omitempty"`
	Wrap   bool           `json:"wrap,omitempty"`
	Facts  []adaptiveFact `json:"facts,omitempty"`
}

type adaptiveFact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

// teamsPayload: a bold title coloured by severity, the text, and a FactSet of the facts.
func teamsPayload(msg Message) teamsMessage {
	color := map[sluicev1.AlertSeverity]string{
		sluicev1.SeverityWarn: "Warning", sluicev1.SeverityError: "Attention",
	}[msg.Severity]
	if color == "" {
		color = "Accent"
	}
	fs := adaptiveElement{Type: "FactSet"}
	for _, f := range facts(msg) {
		fs.Facts = append(fs.Facts, adaptiveFact{Title: f[0], Value: f[1]})
	}
	card := adaptiveCard{
		Schema:  "http://adaptivecards.io/schemas/adaptive-card.json",
		Type:    "AdaptiveCard",
		Version: "1.4",
		Body: []adaptiveElement{
			{Type: "TextBlock", Text: msg.title(),
				Size: "Medium", Weight: "Bolder", Color: color, Wrap: true},
			{Type: "TextBlock", Text: orDash(msg.Text), Wrap: true},
			fs,
		},
	}
	return teamsMessage{
		Type: "message",
		Attachments: []teamsAttachment{{
			ContentType: "application/vnd.microsoft.card.adaptive",
			Content:     card,
		}},
	}
}
