package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Report writes one self-contained HTML file of a Canary's page as it is now, for a postmortem
// or a ticket: its run with every check kept in status, the last runs, conditions and events,
// with the dashboard's style and charts inlined. The file loads nothing (its Content-Security-
// Policy allows no request), so it opens offline. Events the user may not list are left out with
// the apiserver's answer. errors: the Canary not found or unreadable, w failing.
func Report(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName, now time.Time) error {
	cn := &sluicev1.Canary{}
	if err := c.Get(ctx, key, cn); err != nil {
		return fmt.Errorf("reading canary %s: %w", key, err)
	}
	v := canaryView(cn, true)
	generated := metav1.NewTime(now)
	v.Generated = &generated
	page := struct {
		CanaryView
		EventsError string `json:"eventsError,omitempty"`
	}{CanaryView: v}
	events, err := listEvents(ctx, c, cn)
	if err != nil {
		page.EventsError = err.Error()
	}
	page.Events = events
	data, err := json.Marshal(page) // escapes <, > and &: safe inside <script>
	if err != nil {
		return err
	}
	script, err := reportScript()
	if err != nil {
		return err
	}
	style, err := reportStyle()
	if err != nil {
		return err
	}
	return templates.ExecuteTemplate(w, "report.html", map[string]any{
		"Title":  fmt.Sprintf("canary %s/%s, %s", cn.Namespace, cn.Name, now.UTC().Format(time.RFC3339)),
		"Style":  template.CSS(style),
		"Data":   template.JS(data),
		"Script": template.JS(script),
	})
}
