package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Overview is the overview page: every Canary and DataPlane row, and the apiserver's answer when
// a kind cannot be listed.
type Overview struct {
	Namespace  string         `json:"namespace,omitempty"`
	Canaries   []CanaryRow    `json:"canaries"`
	DataPlanes []DataPlaneRow `json:"dataplanes"`
	Errors     KindErrors     `json:"errors"`
}

// KindErrors holds the last list or watch error of each kind ("" when it works).
type KindErrors struct {
	Canary    string `json:"canary,omitempty"`
	DataPlane string `json:"dataplane,omitempty"`
}

func (s *Server) overview() Overview {
	o := Overview{Namespace: s.opts.Namespace, Canaries: []CanaryRow{}, DataPlanes: []DataPlaneRow{}, Errors: s.kindErrors()}
	for _, x := range s.canaries.list() {
		o.Canaries = append(o.Canaries, canaryRow(x.(*sluicev1.Canary)))
	}
	for _, x := range s.planes.list() {
		o.DataPlanes = append(o.DataPlanes, dataPlaneRow(x.(*sluicev1.DataPlane)))
	}
	sort.Slice(o.Canaries, func(i, j int) bool {
		a, b := o.Canaries[i], o.Canaries[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	sort.Slice(o.DataPlanes, func(i, j int) bool { return o.DataPlanes[i].Name < o.DataPlanes[j].Name })
	return o
}

func (s *Server) kindErrors() KindErrors {
	return KindErrors{Canary: s.canaries.err(), DataPlane: s.planes.err()}
}

func (s *Server) serveOverview(w http.ResponseWriter, r *http.Request) {
	waitSynced(r.Context(), s.canaries, s.planes)
	writeJSON(w, http.StatusOK, s.overview())
}

// serveCanary answers a Canary's page with its recent events.
func (s *Server) serveCanary(w http.ResponseWriter, r *http.Request) {
	waitSynced(r.Context(), s.canaries)
	key := r.PathValue("namespace") + "/" + r.PathValue("name")
	cn, ok := s.canaries.get(key).(*sluicev1.Canary)
	if !ok {
		s.notFound(w, s.canaries, "canary "+key)
		return
	}
	v := canaryView(cn, s.opts.ReadOnly)
	var err error
	if v.Events, err = listEvents(r.Context(), s.client, cn); err != nil {
		writeJSON(w, http.StatusOK, struct {
			CanaryView
			EventsError string `json:"eventsError"`
		}{v, err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// serveDataPlane answers a DataPlane's page with its recent events.
func (s *Server) serveDataPlane(w http.ResponseWriter, r *http.Request) {
	waitSynced(r.Context(), s.planes)
	name := r.PathValue("name")
	dp, ok := s.planes.get(name).(*sluicev1.DataPlane)
	if !ok {
		s.notFound(w, s.planes, "dataplane "+name)
		return
	}
	v := dataPlaneView(dp, s.opts.ReadOnly)
	var err error
	if v.Events, err = listEvents(r.Context(), s.client, dp); err != nil {
		writeJSON(w, http.StatusOK, struct {
			DataPlaneView
			EventsError string `json:"eventsError"`
		}{v, err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) notFound(w http.ResponseWriter, wt *watcher, what string) {
	if msg := wt.err(); msg != "" {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": msg})
		return
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": what + " not found"})
}

// maxEvents bounds the events a page shows.
const maxEvents = 50

// listEvents lists the events of o with the user's credentials (one request), newest first.
func listEvents(ctx context.Context, c client.Client, o client.Object) ([]EventView, error) {
	var list corev1.EventList
	kind := "Canary"
	if _, ok := o.(*sluicev1.DataPlane); ok {
		kind = "DataPlane"
	}
	sel := client.MatchingFields{"involvedObject.kind": kind, "involvedObject.name": o.GetName()}
	opts := []client.ListOption{sel}
	if ns := o.GetNamespace(); ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	events := eventViews(list.Items)
	if len(events) > maxEvents {
		events = events[:maxEvents]
	}
	return events, nil
}

// leverRequest is the body of POST /api/levers.
type leverRequest struct {
	Lever     string `json:"lever"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// leverAnswer is the answer of POST /api/levers: the lever's report, or its error verbatim (a
// Forbidden with the apiserver's message) with the apiserver's status code (409: the lever
// refused the phase). A lever that ran answers 200 either way: the page shows the outcome, and
// the browser logs no failed request.
type leverAnswer struct {
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
	Code    int    `json:"code,omitempty"`
}

// serveLever pulls a lever with the user's credentials, through the same function as the
// plugin's command.
func (s *Server) serveLever(w http.ResponseWriter, r *http.Request) {
	var req leverRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "reading the request: " + err.Error()})
		return
	}
	levers := s.opts.CanaryLevers
	key := types.NamespacedName{Namespace: req.Namespace, Name: req.Name}
	if req.Kind == kindDataPlane {
		levers, key.Namespace = s.opts.DataPlaneLevers, ""
	}
	lever, ok := levers[req.Lever]
	if !ok || req.Name == "" || (req.Kind != kindCanary && req.Kind != kindDataPlane) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("no lever %q for a %s", req.Lever, req.Kind)})
		return
	}
	var out bytes.Buffer
	if err := lever(r.Context(), s.client, &out, key); err != nil {
		code := http.StatusConflict
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Code >= 400 {
			code = int(status.Status().Code)
		}
		writeJSON(w, http.StatusOK, leverAnswer{Error: err.Error(), Code: code})
		return
	}
	writeJSON(w, http.StatusOK, leverAnswer{OK: true, Message: strings.TrimSpace(out.String()), Code: http.StatusOK})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
