package convert

import (
	"math"
	"time"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// maxWebhookRetries is the most retries a Sluice webhook allows.
const maxWebhookRetries = 10

// The bounds of a Sluice webhook call's time (the CRD's): one attempt at most 5m, timeout ×
// (1 + retries) at most 10m.
const (
	maxWebhookTimeout  = 5 * time.Minute
	maxWebhookAttempts = 10 * time.Minute
)

// convertAnalysis converts spec.analysis.
func convertAnalysis(in *fAnalysis, c *sluicev1.Canary, r *ObjectReport) {
	out := &c.Spec.Analysis
	kube := c.Spec.Provider == sluicev1.ProviderKubernetes
	out.Interval = takeString(&in.Interval)
	out.Threshold, _ = takeInt(r, "spec.analysis.threshold", &in.Threshold)
	out.Iterations, _ = takeInt(r, "spec.analysis.iterations", &in.Iterations)
	if len(in.Match) > 0 {
		if kube {
			r.drop("spec.analysis.match", "provider kubernetes cannot route by request: the run is blue/green (Flagger ignores the match there too)")
		} else {
			out.Match = convertMatches(in.Match, "spec.analysis.match", r)
		}
	}
	in.Match = nil
	weightsToIterations(in, c, r)
	blueGreen := out.Iterations > 0 && len(out.Match) == 0

	weights := []struct {
		field string
		p     **float64
		dst   *int32
	}{
		{"spec.analysis.maxWeight", &in.MaxWeight, &out.MaxWeight},
		{"spec.analysis.stepWeight", &in.StepWeight, &out.StepWeight},
		{"spec.analysis.stepWeightPromotion", &in.StepWeightPromotion, &out.StepWeightPromotion},
	}
	for _, w := range weights {
		v, ok := takeInt(r, w.field, w.p)
		switch {
		case !ok:
		case blueGreen:
			r.drop(w.field, "a blue/green run (iterations without match) switches all traffic at once (Flagger ignores it there too)")
		default:
			*w.dst = v
		}
	}
	for i, w := range in.StepWeights {
		if blueGreen {
			r.drop("spec.analysis.stepWeights", "a blue/green run (iterations without match) switches all traffic at once")
			break
		}
		v := &w
		n, _ := takeInt(r, fieldf("spec.analysis.stepWeights[%d]", i), &v)
		out.StepWeights = append(out.StepWeights, n)
	}
	in.StepWeights = nil
	if v, ok := takeInt(r, "spec.analysis.primaryReadyThreshold", &in.PrimaryReadyThreshold); ok {
		out.PrimaryReadyThreshold = ptr.To(v)
	}
	if v, ok := takeInt(r, "spec.analysis.canaryReadyThreshold", &in.CanaryReadyThreshold); ok {
		out.CanaryReadyThreshold = ptr.To(v)
	}
	convertMirror(in, out, kube, blueGreen, r)
	convertSessionAffinity(in, out, r)
	for i := range in.Metrics {
		if m, ok := convertMetric(&in.Metrics[i], fieldf("spec.analysis.metrics[%d]", i), r); ok {
			out.Metrics = append(out.Metrics, m)
		}
	}
	in.Metrics = nil
	for i := range in.Webhooks {
		out.Webhooks = append(out.Webhooks, convertWebhook(&in.Webhooks[i], fieldf("spec.analysis.webhooks[%d]", i), r))
	}
	for i := range in.Webhooks {
		residue(r, fieldf("spec.analysis.webhooks[%d]", i), &in.Webhooks[i])
	}
	in.Webhooks = nil
	for i := range in.Alerts {
		a := &in.Alerts[i]
		alert := sluicev1.CanaryAlert{Name: takeString(&a.Name), Severity: sluicev1.AlertSeverity(takeString(&a.Severity))}
		if alert.Severity == "" {
			alert.Severity = sluicev1.SeverityInfo
		}
		if a.ProviderRef != nil {
			alert.ProviderRef = sluicev1.CrossNamespaceObjectReference{Name: takeString(&a.ProviderRef.Name), Namespace: takeString(&a.ProviderRef.Namespace)}
		}
		residue(r, fieldf("spec.analysis.alerts[%d]", i), a)
		out.Alerts = append(out.Alerts, alert)
	}
	in.Alerts = nil
	residue(r, "spec.analysis", in)
}

func convertMirror(in *fAnalysis, out *sluicev1.CanaryAnalysis, kube, blueGreen bool, r *ObjectReport) {
	mirror := takeBool(&in.Mirror)
	weight, hasWeight := takeInt(r, "spec.analysis.mirrorWeight", &in.MirrorWeight)
	switch {
	case !mirror:
		if hasWeight {
			r.drop("spec.analysis.mirrorWeight", "mirror is not on (Flagger ignores it too)")
		}
	case kube:
		r.drop("spec.analysis.mirror", "provider kubernetes cannot mirror requests (Flagger ignores it there too)")
	case !blueGreen:
		r.drop("spec.analysis.mirror", "Sluice mirrors during blue/green runs only (iterations without match)")
	default:
		out.Mirror = true
		if hasWeight {
			out.MirrorWeight = weight
		}
	}
}

func convertSessionAffinity(in *fAnalysis, out *sluicev1.CanaryAnalysis, r *ObjectReport) {
	sa := in.SessionAffinity
	if sa == nil {
		return
	}
	in.SessionAffinity = nil
	if out.Iterations > 0 {
		r.drop("spec.analysis.sessionAffinity", "applies to weighted runs only; this is an A/B or blue/green run (Flagger ignores it there too)")
		return
	}
	out.SessionAffinity = &sluicev1.SessionAffinity{CookieName: takeString(&sa.CookieName)}
	out.SessionAffinity.MaxAge, _ = takeInt(r, "spec.analysis.sessionAffinity.maxAge", &sa.MaxAge)
	if sa.PrimaryCookieName != nil {
		r.drop("spec.analysis.sessionAffinity.primaryCookieName", "Sluice keeps only canary users sticky; users on the primary follow the weights")
		sa.PrimaryCookieName = nil
	}
	residue(r, "spec.analysis.sessionAffinity", sa) // cookie attributes: domain, path, secure, ...
}

// convertMetric converts one metric; Flagger's deprecated threshold becomes a thresholdRange
// bound, as Flagger reads it (a minimum for request-success-rate, a maximum otherwise).
func convertMetric(in *fMetric, field string, r *ObjectReport) (sluicev1.CanaryMetric, bool) {
	m := sluicev1.CanaryMetric{Name: takeString(&in.Name), Interval: takeString(&in.Interval), Query: takeString(&in.Query)}
	if tr := in.ThresholdRange; tr != nil {
		m.ThresholdRange = &sluicev1.ThresholdRange{Min: tr.Min, Max: tr.Max}
		in.ThresholdRange = nil
	}
	if in.Threshold != nil {
		v := *in.Threshold
		in.Threshold = nil
		switch {
		case m.ThresholdRange != nil:
			r.drop(field+".threshold", "thresholdRange is set too; Flagger reads thresholdRange")
		case m.Name == sluicev1.MetricRequestSuccessRate:
			m.ThresholdRange = &sluicev1.ThresholdRange{Min: ptr.To(v)}
			r.change(field+".threshold", "deprecated: written as thresholdRange.min %v", v)
		default:
			m.ThresholdRange = &sluicev1.ThresholdRange{Max: ptr.To(v)}
			r.change(field+".threshold", "deprecated: written as thresholdRange.max %v", v)
		}
	}
	if ref := in.TemplateRef; ref != nil {
		m.TemplateRef = &sluicev1.CrossNamespaceObjectReference{Name: takeString(&ref.Name), Namespace: takeString(&ref.Namespace)}
		residue(r, field+".templateRef", ref)
		in.TemplateRef = nil
	}
	m.TemplateVariables, in.TemplateVariables = in.TemplateVariables, nil
	if m.Query != "" && m.TemplateRef != nil {
		r.drop(field+".query", "templateRef is set too; Flagger reads the template")
		m.Query = ""
	}
	residue(r, field, in)
	if m.TemplateRef == nil && m.Query == "" && m.Name != sluicev1.MetricRequestSuccessRate && m.Name != sluicev1.MetricRequestDuration {
		r.drop(field, "%q is neither a built-in metric nor backed by templateRef or query", m.Name)
		return m, false
	}
	if m.ThresholdRange == nil {
		// Flagger records such a metric and never fails on it; Sluice judges every metric it
		// runs (a check without a bound would pass whatever it measures), so it has no counterpart.
		r.drop(field, "%q has no thresholdRange: Flagger only records it, Sluice judges every metric; add a thresholdRange to keep it as a check", m.Name)
		return m, false
	}
	if m.Query != "" {
		r.change(field+".query", "run as written against the Canary's metrics server, as Flagger does; a MetricTemplate is rendered per Canary")
	}
	return m, true
}

func convertWebhook(in *fWebhook, field string, r *ObjectReport) sluicev1.CanaryWebhook {
	w := sluicev1.CanaryWebhook{
		Name: takeString(&in.Name), Type: sluicev1.WebhookType(takeString(&in.Type)), URL: takeString(&in.URL),
		Timeout: takeString(&in.Timeout), MuteAlert: takeBool(&in.MuteAlert),
	}
	if w.Type == "" {
		w.Type = sluicev1.WebhookRollout
	}
	w.Retries, _ = takeInt(r, field+".retries", &in.Retries)
	if w.Retries > maxWebhookRetries {
		r.change(field+".retries", "%d → %d, the most Sluice allows per check", w.Retries, maxWebhookRetries)
		w.Retries = maxWebhookRetries
	}
	boundCallTime(&w, field, r)
	w.Metadata, in.Metadata = in.Metadata, nil
	if in.DisableTLS != nil && *in.DisableTLS {
		r.drop(field+".disableTLS", "Sluice always verifies the webhook's TLS certificate: use http:// inside the cluster or a trusted certificate")
	}
	in.DisableTLS = nil
	return w
}

// boundCallTime brings a webhook's timeout and retries within Sluice's bounds on a call's time:
// a timeout above 5m becomes 5m, and retries are cut so that timeout × (1 + retries) is at most
// 10m. A timeout that is not a duration is left for admission to refuse.
func boundCallTime(w *sluicev1.CanaryWebhook, field string, r *ObjectReport) {
	d, err := time.ParseDuration(w.Timeout)
	if err != nil {
		return
	}
	if d > maxWebhookTimeout {
		r.change(field+".timeout", "%s → %s, the longest attempt Sluice allows", w.Timeout, maxWebhookTimeout)
		w.Timeout, d = "5m", maxWebhookTimeout
	}
	if d > 0 && d*time.Duration(1+w.Retries) > maxWebhookAttempts {
		retries := int32(maxWebhookAttempts/d) - 1
		r.change(field+".retries", "%d → %d: timeout × (1 + retries) is at most %s in Sluice", w.Retries, retries, maxWebhookAttempts)
		w.Retries = retries
	}
}

// weightsToIterations turns the weights of a Canary that can only run blue/green (provider
// kubernetes, a DaemonSet target) into iterations when it has none: Flagger runs such a Canary's
// weighted steps as checks without moving traffic by weight, so iterations is the number of
// checks it ran (len(stepWeights), or maxWeight (default 100) / stepWeight rounded up). The
// weights are consumed and the change reported; Sluice rejects weights on such a Canary.
func weightsToIterations(in *fAnalysis, c *sluicev1.Canary, r *ObjectReport) {
	why := ""
	switch {
	case c.Spec.Provider == sluicev1.ProviderKubernetes:
		why = "provider kubernetes switches the apex Service all at once"
	case c.Spec.TargetRef.Kind == "DaemonSet":
		why = "a DaemonSet cannot be split by weight"
	}
	if why == "" || c.Spec.Analysis.Iterations > 0 || len(c.Spec.Analysis.Match) > 0 ||
		(in.StepWeight == nil && len(in.StepWeights) == 0 && in.MaxWeight == nil && in.StepWeightPromotion == nil) {
		return
	}
	maxWeight := 100.0
	if in.MaxWeight != nil && *in.MaxWeight > 0 {
		maxWeight = *in.MaxWeight
	}
	n := 1
	switch {
	case len(in.StepWeights) > 0:
		n = len(in.StepWeights)
	case in.StepWeight != nil && *in.StepWeight > 0:
		n = int(math.Ceil(maxWeight / *in.StepWeight))
	}
	in.StepWeight, in.StepWeights, in.MaxWeight, in.StepWeightPromotion = nil, nil, nil, nil
	c.Spec.Analysis.Iterations = int32(n)
	r.change("spec.analysis.iterations", "set to %d from the weights (stepWeight/stepWeights/maxWeight/stepWeightPromotion, removed): %s, so the run is blue/green, "+
		"%d checks at 0 %% then all traffic at once, as many checks as Flagger ran with those weights", n, why, n)
}
