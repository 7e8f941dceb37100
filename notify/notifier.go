package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/tenancy"
)

// SecretKeyAddress is the key of an AlertProvider's Secret that holds the webhook URL.
const SecretKeyAddress = "address"

// DefaultTimeout bounds one delivery to one provider when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// DefaultUsername is the sender name used when an AlertProvider sets none.
const DefaultUsername = "sluice"

// ErrProviderConfig means an alert cannot be delivered until its configuration changes: the
// AlertProvider or its Secret does not exist, the Secret has no usable key "address", or the
// provider type is unknown. The message names the object and key that are missing. Test it with
// errors.Is; retrying does not help.
var ErrProviderConfig = errors.New("alert provider misconfigured")

// Options configure a Notifier.
type Options struct {
	// HTTPClient posts the messages. Nil means Egress.Client(nil): no redirects, no address the
	// policy refuses, only allowed destinations.
	HTTPClient *http.Client
	// Egress is the outbound destination policy every provider's address must pass. Nil: the
	// default policy (egress.Options{}: loopback, link-local, metadata, ... refused).
	Egress *egress.Policy
	// Refs decides which namespaces a namespaced subject's providerRef may name. The zero value
	// allows only the subject's own.
	Refs tenancy.RefPolicy
	// Timeout bounds the delivery to one provider (Secret lookup included). Zero means
	// DefaultTimeout.
	Timeout time.Duration
}

// Notifier delivers Messages to the AlertProviders a list of alerts names (a Canary's or a
// data-plane upgrade's analysis.alerts). It is safe for concurrent use.
type Notifier struct {
	reader  client.Reader
	client  *http.Client
	egress  *egress.Policy
	refs    tenancy.RefPolicy
	timeout time.Duration
	// proxied caches one client per spec.proxy URL, sharing its connections.
	proxied sync.Map
}

// New returns a Notifier that reads AlertProviders and Secrets through reader (a cached client
// or an API reader).
func New(reader client.Reader, opts Options) *Notifier {
	n := &Notifier{reader: reader, client: opts.HTTPClient, egress: opts.Egress, refs: opts.Refs, timeout: opts.Timeout}
	if n.client == nil {
		n.client = opts.Egress.Client(nil)
	}
	if n.timeout <= 0 {
		n.timeout = DefaultTimeout
	}
	return n
}

// Send delivers msg to every alert of alerts whose severity accepts
// msg.Severity (see Accepts). Providers are posted to concurrently, each bounded by
// Options.Timeout, so Send returns within about one timeout; a failing provider does not stop
// the others. Send returns nil when every selected provider answered 2xx (and when no alert
// selects the message), otherwise errors.Join of one error per failed alert, each naming the
// alert and the provider:
//   - ErrProviderConfig (wrapped): missing AlertProvider, missing Secret, missing or invalid key
//     "address", unknown provider type;
//   - a delivery error: the HTTP status ("HTTP 500 Internal Server Error"), a timeout, or the
//     connection error (without the URL);
//   - an API error reading the AlertProvider or Secret.
//
// An alert's providerRef without a namespace names an AlertProvider in msg.Subject.Namespace.
func (n *Notifier) Send(ctx context.Context, alerts []sluicev1.CanaryAlert, msg Message) error {
	msg = msg.withDefaults()
	var selected []sluicev1.CanaryAlert
	for _, a := range alerts {
		if Accepts(a.Severity, msg.Severity) {
			selected = append(selected, a)
		}
	}
	errs := make([]error, len(selected))
	var wg sync.WaitGroup
	for i, a := range selected {
		wg.Go(func() { errs[i] = n.sendAlert(ctx, msg.Subject.Namespace, a, msg) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// target is a resolved AlertProvider.
type target struct {
	key      types.NamespacedName // the AlertProvider
	spec     sluicev1.AlertProviderSpec
	address  string
	username string
	// client posts to the provider: the Notifier's, or one through spec.proxy.
	client *http.Client
}

// sendAlert resolves one alert's provider and posts msg to it.
func (n *Notifier) sendAlert(ctx context.Context, namespace string, a sluicev1.CanaryAlert, msg Message) error {
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	t, err := n.resolve(ctx, namespace, a.ProviderRef)
	if err != nil {
		return fmt.Errorf("alert %q: %w", a.Name, err)
	}
	switch t.spec.Type {
	case sluicev1.AlertProviderSlack:
		err = n.postSlack(ctx, t, msg)
	case sluicev1.AlertProviderMSTeams:
		err = postJSON(ctx, t.client, t.address, teamsPayload(msg))
	case sluicev1.AlertProviderDiscord:
		err = postJSON(ctx, t.client, t.address, discordPayload(msg, t.username))
	case sluicev1.AlertProviderRocket:
		err = postJSON(ctx, t.client, t.address, rocketPayload(msg, t.spec.Channel, t.username))
	case sluicev1.AlertProviderGoogleChat:
		err = postJSON(ctx, t.client, t.address, googleChatPayload(msg))
	case sluicev1.AlertProviderGeneric:
		err = postJSON(ctx, t.client, t.address, genericPayload(msg))
	default:
		err = fmt.Errorf("%w: unknown type %q", ErrProviderConfig, t.spec.Type)
	}
	if err != nil {
		return fmt.Errorf("alert %q: %s AlertProvider %s: %w", a.Name, t.spec.Type, t.key, n.describe(ctx, err))
	}
	return nil
}

// resolve reads the AlertProvider ref (namespace defaults to namespace) and the address in its
// Secret. A ref without a namespace from a cluster-scoped subject (namespace empty) is a
// configuration error.
func (n *Notifier) resolve(ctx context.Context, namespace string, ref sluicev1.CrossNamespaceObjectReference) (target, error) {
	t := target{key: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}
	if t.key.Namespace == "" {
		t.key.Namespace = namespace
	}
	if t.key.Namespace == "" {
		return t, fmt.Errorf("%w: providerRef %s names no namespace (required for a cluster-scoped object)",
			ErrProviderConfig, t.key.Name)
	}
	if err := n.refs.Check(namespace, "providerRef", "AlertProvider", t.key.Namespace, t.key.Name); err != nil {
		return t, fmt.Errorf("%w: %w", ErrProviderConfig, err)
	}
	var p sluicev1.AlertProvider
	if err := n.reader.Get(ctx, t.key, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return t, fmt.Errorf("%w: AlertProvider %s not found", ErrProviderConfig, t.key)
		}
		return t, fmt.Errorf("reading AlertProvider %s: %w", t.key, err)
	}
	t.spec = p.Spec
	t.username = p.Spec.Username
	if t.username == "" {
		t.username = DefaultUsername
	}
	var err error
	if t.client, err = n.clientFor(p.Spec.Proxy); err != nil {
		return t, fmt.Errorf("%w: AlertProvider %s: %w", ErrProviderConfig, t.key, err)
	}
	// Calls go to the proxy: its address must pass the egress policy (the dialer checks it too).
	if err := n.egress.CheckURL(p.Spec.Proxy); p.Spec.Proxy != "" && err != nil {
		return t, fmt.Errorf("%w: AlertProvider %s: spec.proxy: %w", ErrProviderConfig, t.key, err)
	}

	secretKey := types.NamespacedName{Namespace: t.key.Namespace, Name: p.Spec.SecretRef.Name}
	if secretKey.Name == "" {
		return t, fmt.Errorf("%w: AlertProvider %s: secretRef names no Secret (key %q holds the URL)",
			ErrProviderConfig, t.key, SecretKeyAddress)
	}
	var s corev1.Secret
	if err := n.reader.Get(ctx, secretKey, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return t, fmt.Errorf("%w: AlertProvider %s: Secret %s (key %q) not found",
				ErrProviderConfig, t.key, secretKey, SecretKeyAddress)
		}
		return t, fmt.Errorf("AlertProvider %s: reading Secret %s: %w", t.key, secretKey, err)
	}
	raw, ok := s.Data[SecretKeyAddress]
	if !ok {
		return t, fmt.Errorf("%w: AlertProvider %s: Secret %s has no key %q",
			ErrProviderConfig, t.key, secretKey, SecretKeyAddress)
	}
	t.address = strings.TrimSpace(string(raw)) // Secrets made from files often end in a newline
	if u, err := url.Parse(t.address); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The value is a credential: never print it.
		return t, fmt.Errorf("%w: AlertProvider %s: key %q of Secret %s is not an http(s) URL",
			ErrProviderConfig, t.key, SecretKeyAddress, secretKey)
	}
	if err := n.egress.CheckURL(t.address); err != nil {
		return t, fmt.Errorf("%w: AlertProvider %s: the address in Secret %s: %w", ErrProviderConfig, t.key, secretKey, err)
	}
	return t, nil
}

// describe rewrites a delivery error so it is short and never contains the webhook URL (which
// carries the credential), a resolved address, a port or a certificate's names: a deadline
// becomes "timed out", a failed request (*url.Error) its fixed reason (egress.Reason), its cause
// going to the debug log.
func (n *Notifier) describe(ctx context.Context, err error) error {
	if errors.Is(err, ErrProviderConfig) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s", n.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		log.FromContext(ctx).V(1).Info("Alert provider request failed", "error", ue.Err.Error())
		return fmt.Errorf("%s request failed: %w", ue.Op, egress.Summary(ue.Err))
	}
	return err
}

// Check resolves the AlertProvider and Secret of every alert without sending anything, so a
// misconfiguration shows as a condition before the first transition needs it. providerRefs
// without a namespace are looked up in namespace.
// errors: errors.Join of one error per misconfigured alert, each wrapping ErrProviderConfig (or
// an API error), naming the AlertProvider, the Secret and the key.
func (n *Notifier) Check(ctx context.Context, namespace string, alerts []sluicev1.CanaryAlert) error {
	var errs []error
	for _, a := range alerts {
		if _, err := n.resolve(ctx, namespace, a.ProviderRef); err != nil {
			errs = append(errs, fmt.Errorf("alert %q: %w", a.Name, err))
		}
	}
	return errors.Join(errs...)
}
