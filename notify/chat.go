package notify

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// rocketMessage is the body of a Rocket.Chat incoming webhook (Slack-compatible attachments).
type rocketMessage struct {
	Text        string             `json:"text"`
	Channel     string             `json:"channel,omitempty"`
	Username    string             `json:"username,omitempty"`
	Attachments []rocketAttachment `json:"attachments"`
}

type rocketAttachment struct {
	Title  string        `json:"title"`
	Text   string        `json:"text"`
	Color  string        `json:"color"`
	Fields []rocketField `json:"fields"`
}

type rocketField struct {
	Title string `json:"title"`
	Value string `json:"value"`
	Short bool   `json:"short"`
}

// rocketPayload: the summary as text, and one attachment titled with the event, coloured by
// severity, with the facts as short fields.
func rocketPayload(msg Message, channel, username string) rocketMessage {
	a := rocketAttachment{
		Title: msg.title(),
		Text:  orDash(msg.Text),
		Color: "#" + strings.ToUpper(hex6(severityColor(msg.Severity))),
	}
	for _, f := range facts(msg) {
		a.Fields = append(a.Fields, rocketField{Title: f[0], Value: f[1], Short: true})
	}
	return rocketMessage{Text: msg.summary(), Channel: channel, Username: username, Attachments: []rocketAttachment{a}}
}

func hex6(rgb int) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 6)
	for i := 5; i >= 0; i-- {
		out[i] = digits[rgb&0xf]
		rgb >>= 4
	}
	return string(out)
}

// googleChatMessage is the body of a Google Chat space webhook: a text fallback and one card.
type googleChatMessage struct {
	Text    string           `json:"text"`
	CardsV2 []googleChatCard `json:"cardsV2"`
}

type googleChatCard struct {
	CardID string         `json:"cardId"`
	Card   googleChatBody `json:"card"`
}

type googleChatBody struct {
	Header   googleChatHeader    `json:"header"`
	Sections []googleChatSection `json:"sections"`
}

type googleChatHeader struct {
	Title    string `json:"title"`
	Subtitle string `json:"subtitle"`
}

type googleChatSection struct {
	Widgets []googleChatWidget `json:"widgets"`
}

type googleChatWidget struct {
	DecoratedText googleChatDecoratedText `json:"decoratedText"`
}

type googleChatDecoratedText struct {
	TopLabel string `json:"topLabel"`
	Text     string `json:"text"`
}

// googleChatPayload: the summary as text, and a card headed with the event and the message text,
// one labelled line per fact.
func googleChatPayload(msg Message) googleChatMessage {
	sec := googleChatSection{}
	for _, f := range facts(msg) {
		sec.Widgets = append(sec.Widgets, googleChatWidget{DecoratedText: googleChatDecoratedText{TopLabel: f[0], Text: f[1]}})
	}
	return googleChatMessage{
		Text: msg.summary(),
		CardsV2: []googleChatCard{{CardID: "sluice", Card: googleChatBody{
			Header:   googleChatHeader{Title: msg.title(), Subtitle: orDash(msg.Text)},
			Sections: []googleChatSection{sec},
		}}},
	}
}

// errProxy is the (credential-free) complaint about an unusable spec.proxy.
var errProxy = errors.New("spec.proxy is not an http(s) URL")

// clientFor returns the client for an AlertProvider: the Notifier's without proxy, else a copy of
// it whose transport goes through proxy (one per proxy URL, cached). errors: errProxy.
func (n *Notifier) clientFor(proxy string) (*http.Client, error) {
	if proxy == "" {
		return n.client, nil
	}
	if c, ok := n.proxied.Load(proxy); ok {
		return c.(*http.Client), nil
	}
	u, err := url.Parse(proxy)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errProxy // the URL may carry credentials: never print it
	}
	base, ok := n.client.Transport.(*http.Transport)
	if n.client.Transport == nil || !ok {
		base = http.DefaultTransport.(*http.Transport)
	}
	tr := base.Clone()
	tr.Proxy = http.ProxyURL(u)
	c := *n.client
	c.Transport = tr
	actual, _ := n.proxied.LoadOrStore(proxy, &c)
	return actual.(*http.Client), nil
}
