package notify

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func TestRocketPayload(t *testing.T) {
	var got struct {
		Text        string `json:"text"`
		Channel     string `json:"channel"`
		Username    string `json:"username"`
		Attachments []struct {
			Title  string `json:"title"`
			Text   string `json:"text"`
			Color  string `json:"color"`
			Fields []struct {
				Title string `json:"title"`
				Value string `json:"value"`
				Short bool   `json:"short"`
			} `json:"fields"`
		} `json:"attachments"`
	}
	rcv := newReceiver(t, http.StatusOK)
	objs := provider("p", sluicev1.AlertProviderRocket, rcv.url())
	objs[0].(*sluicev1.AlertProvider).Spec.Channel = "releases"
	if err := newNotifier(t, objs...).Send(context.Background(), alertList(alert("a", "", "p")), rollback()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	decodeOne(t, rcv, &got)
	if got.Channel != "releases" || got.Username != DefaultUsername || !strings.Contains(got.Text, "podinfo") {
		t.Errorf("message = %+v", got)
	}
	if len(got.Attachments) != 1 {
		t.Fatalf("attachments = %+v, want one", got.Attachments)
	}
	a := got.Attachments[0]
	if !strings.Contains(a.Title, "test/podinfo") || a.Color != "#E01E5A" || a.Text != "Failed checks reached threshold 5 <canary>" {
		t.Errorf("attachment = %+v", a)
	}
	fields := map[string]string{}
	for _, f := range a.Fields {
		fields[f.Title] = f.Value
	}
	if fields["Phase"] != "Failed" || fields["Failing metric"] != "request-success-rate" || fields["Value"] != "97.5" {
		t.Errorf("fields = %v", fields)
	}
}

func TestGoogleChatPayload(t *testing.T) {
	var got struct {
		Text    string `json:"text"`
		CardsV2 []struct {
			CardID string `json:"cardId"`
			Card   struct {
				Header struct {
					Title    string `json:"title"`
					Subtitle string `json:"subtitle"`
				} `json:"header"`
				Sections []struct {
					Widgets []struct {
						DecoratedText struct {
							TopLabel string `json:"topLabel"`
							Text     string `json:"text"`
						} `json:"decoratedText"`
					} `json:"widgets"`
				} `json:"sections"`
			} `json:"card"`
		} `json:"cardsV2"`
	}
	decodeOne(t, sendTo(t, sluicev1.AlertProviderGoogleChat, rollback()), &got)
	if !strings.Contains(got.Text, "podinfo") || len(got.CardsV2) != 1 {
		t.Fatalf("message = %+v", got)
	}
	card := got.CardsV2[0].Card
	if !strings.Contains(card.Header.Title, "test/podinfo") || card.Header.Subtitle != "Failed checks reached threshold 5 <canary>" {
		t.Errorf("header = %+v", card.Header)
	}
	labels := map[string]string{}
	for _, w := range card.Sections[0].Widgets {
		labels[w.DecoratedText.TopLabel] = w.DecoratedText.Text
	}
	if labels["Weight"] != "10%" || labels["Threshold"] != "[99, +Inf]" {
		t.Errorf("widgets = %v", labels)
	}
}

// proxyServer is an HTTP forward proxy that answers every request itself, recording the target
// URL and body.
type proxyServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

func newProxy(t *testing.T) *proxyServer {
	p := &proxyServer{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.got = append(p.got, r.URL.String()+" "+string(body))
		p.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// TestProxy delivers to an address that does not resolve, through spec.proxy: the proxy receives
// the request for the webhook URL; without the proxy the delivery fails.
func TestProxy(t *testing.T) {
	p := newProxy(t)
	const hook = "http://hooks.example.invalid/services/T000/B000/TOKEN"
	objs := provider("p", sluicev1.AlertProviderGeneric, hook)
	objs[0].(*sluicev1.AlertProvider).Spec.Proxy = p.srv.URL
	if err := newNotifier(t, objs...).Send(context.Background(), alertList(alert("a", "", "p")), rollback()); err != nil {
		t.Fatalf("Send through the proxy: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.got) != 1 || !strings.HasPrefix(p.got[0], hook+" ") || !strings.Contains(p.got[0], `"event":"RolledBack"`) {
		t.Fatalf("proxy received %q, want one POST for %s", p.got, hook)
	}

	direct := provider("p", sluicev1.AlertProviderGeneric, hook)
	if err := newNotifier(t, direct...).Send(context.Background(), alertList(alert("a", "", "p")), rollback()); err == nil {
		t.Fatal("a direct delivery to an address that does not resolve succeeded")
	}

	bad := provider("p", sluicev1.AlertProviderGeneric, hook)
	bad[0].(*sluicev1.AlertProvider).Spec.Proxy = "socks5://user:secret@proxy:1080"
	err := newNotifier(t, bad...).Send(context.Background(), alertList(alert("a", "", "p")), rollback())
	if err == nil || !strings.Contains(err.Error(), "spec.proxy is not an http(s) URL") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("unusable proxy: %v, want a config error that does not print the URL", err)
	}
}
