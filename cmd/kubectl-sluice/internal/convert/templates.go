package convert

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// flaggerVariable matches a Flagger query template variable: {{ namespace }}, {{ variables.x }}.
var flaggerVariable = regexp.MustCompile(`\{\{(-?)\s*(name|namespace|target|service|interval|ingress|variables\.[A-Za-z_][A-Za-z0-9_]*)\s*(-?)\}\}`)

// convertQuery rewrites Flagger's template variables ({{ namespace }}) into Sluice's
// ({{ .namespace }}) and reports whether it changed anything; {{ ingress }} has no counterpart
// and is left as is.
func convertQuery(q string) (string, bool, bool) {
	changed, ingress := false, false
	out := flaggerVariable.ReplaceAllStringFunc(q, func(m string) string {
		parts := flaggerVariable.FindStringSubmatch(m)
		if parts[2] == "ingress" {
			ingress = true
			return m
		}
		changed = true
		return "{{" + parts[1] + " ." + parts[2] + " " + parts[3] + "}}"
	})
	return out, changed, ingress
}

// convertMetricTemplate converts a Prometheus MetricTemplate; templates of other providers are
// not converted.
func convertMetricTemplate(in *fMetricTemplate, r *ObjectReport) []client.Object {
	out := &sluicev1.MetricTemplate{}
	out.APIVersion, out.Kind = sluicev1.GroupVersion.String(), "MetricTemplate"
	out.ObjectMeta = convertMeta(in.Metadata, r)
	convertStatus(in.Status, r)
	p := in.Spec.Provider
	if p == nil {
		p = &fMetricProvider{}
	}
	typ := takeString(&p.Type)
	if typ != "" && typ != "prometheus" {
		r.drop("spec.provider.type", "%s: Sluice queries Prometheus only; the MetricTemplate is not converted (a Canary using it will stall naming it)", typ)
		return nil
	}
	out.Spec.Provider = sluicev1.MetricTemplateProvider{
		Type: "prometheus", Address: takeString(&p.Address), InsecureSkipVerify: takeBool(&p.InsecureSkipVerify),
	}
	if p.SecretRef != nil {
		out.Spec.Provider.SecretRef = &corev1.LocalObjectReference{Name: takeString(&p.SecretRef.Name)}
		residue(r, "spec.provider.secretRef", p.SecretRef)
		p.SecretRef = nil
	}
	if len(p.Headers) > 0 {
		r.drop("spec.provider.headers", "Sluice sends no extra headers to Prometheus; put a proxy that adds them in front, or use credentials in secretRef")
		p.Headers = nil
	}
	if p.Region != nil {
		r.drop("spec.provider.region", "a CloudWatch setting")
		p.Region = nil
	}
	residue(r, "spec.provider", p)
	in.Spec.Provider = nil
	query, changed, ingress := convertQuery(takeString(&in.Spec.Query))
	out.Spec.Query = query
	if changed {
		r.change("spec.query", "template variables {{ name }} → {{ .name }} (Go template fields); values are escaped for PromQL string literals")
	}
	if ingress {
		r.drop("spec.query", "{{ ingress }} (the NGINX ingress name) has no Sluice counterpart: the API server refuses the template until it is replaced")
	}
	residue(r, "spec", &in.Spec)
	return []client.Object{out}
}

// addressKey is the Secret key Sluice reads an AlertProvider's URL from.
const addressKey = "address"

// convertAlertProvider converts an AlertProvider. Sluice keeps webhook URLs only in Secrets: an
// inline address moves into a Secret written alongside.
func convertAlertProvider(in *fAlertProvider, r *ObjectReport) []client.Object {
	out := &sluicev1.AlertProvider{}
	out.APIVersion, out.Kind = sluicev1.GroupVersion.String(), "AlertProvider"
	out.ObjectMeta = convertMeta(in.Metadata, r)
	convertStatus(in.Status, r)
	s := &in.Spec
	typ := takeString(&s.Type)
	switch sluicev1.AlertProviderType(typ) {
	case sluicev1.AlertProviderSlack, sluicev1.AlertProviderMSTeams, sluicev1.AlertProviderDiscord,
		sluicev1.AlertProviderRocket, sluicev1.AlertProviderGoogleChat:
		out.Spec.Type = sluicev1.AlertProviderType(typ)
	default:
		r.drop("spec.type", "%q: Sluice sends to slack, msteams, discord, rocket, gchat and generic webhooks; the AlertProvider is not converted", typ)
		return nil
	}
	out.Spec.Channel, out.Spec.Username, out.Spec.Proxy = takeString(&s.Channel), takeString(&s.Username), takeString(&s.Proxy)
	address := takeString(&s.Address)
	objs := []client.Object{}
	switch {
	case s.SecretRef != nil:
		out.Spec.SecretRef = corev1.LocalObjectReference{Name: takeString(&s.SecretRef.Name)}
		residue(r, "spec.secretRef", s.SecretRef)
		s.SecretRef = nil
		if address != "" {
			r.drop("spec.address", "secretRef is set too; Flagger reads the address from the Secret")
		}
	case address != "":
		secret := &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: secretNameFor(out.Name), Namespace: out.Namespace},
			StringData: map[string]string{addressKey: address},
		}
		out.Spec.SecretRef = corev1.LocalObjectReference{Name: secret.Name}
		objs = append(objs, secret)
		r.change("spec.address", "moved into Secret %s (key %s), written before the AlertProvider: Sluice reads webhook URLs only from Secrets", secret.Name, addressKey)
	default:
		r.drop("spec", "neither address nor secretRef: the AlertProvider is not converted")
		return nil
	}
	residue(r, "spec", s)
	return append(objs, out)
}

// secretNameFor names the Secret holding an AlertProvider's address.
func secretNameFor(provider string) string {
	return strings.TrimSuffix(provider, "-") + "-alert-address"
}
