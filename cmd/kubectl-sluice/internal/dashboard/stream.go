package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// heartbeat keeps an idle stream open through proxies and lets the server notice a closed page.
const heartbeat = 25 * time.Second

// streamEvent is one Server-Sent Event: its name and JSON data.
type streamEvent struct {
	name string
	data any
}

// serveStream pushes a page's data as Server-Sent Events, from the informers' caches: first the
// whole page, then each change as it happens (no request to the apiserver).
//
//	?view=overview       event "overview" (Overview), then "canary" / "dataplane" ({key, row}, row
//	                     null once deleted) and "errors" (KindErrors) on changes
//	?canary=NS/NAME      event "canary" (CanaryView, null once deleted) on every change
//	?dataplane=NAME      event "dataplane" (DataPlaneView, null once deleted) on every change
//
// Every stream also gets "errors" when listing or watching a kind starts or stops failing.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var wants func(objKey) bool
	var render func(objKey) []streamEvent
	var first func() []streamEvent
	// The page's own kind must be listed before its first message; the other kind's rows follow
	// as changes (a slow or refused DataPlane list does not hold the Canaries).
	syncFirst := s.canaries
	switch {
	case q.Get("view") == "overview":
		wants = func(objKey) bool { return true }
		first = func() []streamEvent { return []streamEvent{{"overview", s.overview()}} }
		render = func(k objKey) []streamEvent {
			if k.key == "" {
				return []streamEvent{{"errors", s.kindErrors()}}
			}
			return []streamEvent{{k.kind, map[string]any{"key": k.key, "row": s.row(k)}}}
		}
	case q.Get("canary") != "" || q.Get("dataplane") != "":
		self := objKey{kind: kindCanary, key: q.Get("canary")}
		if self.key == "" {
			self, syncFirst = objKey{kind: kindDataPlane, key: q.Get("dataplane")}, s.planes
		}
		wants = func(k objKey) bool { return k == self || k.key == "" }
		first = func() []streamEvent {
			return []streamEvent{{"errors", s.kindErrors()}, {self.kind, s.page(self)}}
		}
		render = func(k objKey) []streamEvent {
			if k.key == "" {
				return []streamEvent{{"errors", s.kindErrors()}}
			}
			return []streamEvent{{k.kind, s.page(k)}}
		}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "say which page: ?view=overview, ?canary=NS/NAME or ?dataplane=NAME"})
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	sub := s.hub.subscribe(wants)
	defer s.hub.unsubscribe(sub)
	waitSynced(r.Context(), syncFirst)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	sub.take() // the first page below holds every change so far
	if err := writeEvents(w, first()); err != nil {
		return
	}
	flusher.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
		case <-sub.wake:
			var events []streamEvent
			for _, k := range sub.take() {
				events = append(events, render(k)...)
			}
			if err := writeEvents(w, events); err != nil {
				return
			}
		}
		flusher.Flush()
	}
}

// row is the overview line of k, nil once the object is gone.
func (s *Server) row(k objKey) any {
	switch k.kind {
	case kindCanary:
		if cn, ok := s.canaries.get(k.key).(*sluicev1.Canary); ok {
			return canaryRow(cn)
		}
	case kindDataPlane:
		if dp, ok := s.planes.get(k.key).(*sluicev1.DataPlane); ok {
			return dataPlaneRow(dp)
		}
	}
	return nil
}

// page is the page view of k (without its events, which the page fetches), nil once the object
// is gone.
func (s *Server) page(k objKey) any {
	switch k.kind {
	case kindCanary:
		if cn, ok := s.canaries.get(k.key).(*sluicev1.Canary); ok {
			return canaryView(cn, s.opts.ReadOnly)
		}
	case kindDataPlane:
		if dp, ok := s.planes.get(k.key).(*sluicev1.DataPlane); ok {
			return dataPlaneView(dp, s.opts.ReadOnly)
		}
	}
	return nil
}

func writeEvents(w http.ResponseWriter, events []streamEvent) error {
	for _, e := range events {
		data, err := json.Marshal(e.data)
		if err != nil {
			return err
		}
		// JSON has no raw newline, so the data is one "data:" line.
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, strings.TrimSpace(string(data))); err != nil {
			return err
		}
	}
	return nil
}

// waitSynced waits until each watcher listed once or reported why it cannot, so a page opened
// right after the start does not show an empty table; it gives up with ctx or after 10 s.
func waitSynced(ctx context.Context, ws ...*watcher) {
	deadline := time.Now().Add(10 * time.Second)
	for _, w := range ws {
		for !w.informer.HasSynced() && w.err() == "" && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}
