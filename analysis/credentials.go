package analysis

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// Keys of a MetricTemplate's credentials Secret.
const (
	// SecretKeyToken holds a bearer token.
	SecretKeyToken = "token"
	// SecretKeyUsername and SecretKeyPassword hold basic-auth credentials.
	SecretKeyUsername = "username"
	SecretKeyPassword = "password"
)

// credentials authenticate requests to a metrics server; the zero value sends none.
type credentials struct {
	authorization string // value of the Authorization header, empty for none
}

// fingerprint identifies the credentials in the client cache without keeping them in the key.
func (c credentials) fingerprint() [sha256.Size]byte {
	if c.authorization == "" {
		return [sha256.Size]byte{}
	}
	return sha256.Sum256([]byte(c.authorization))
}

// credentialsFromSecret reads key "token" (bearer) or keys "username" and "password" (basic auth)
// of s. Surrounding whitespace of the token is ignored (Secrets made from files often end in a
// newline). errors: a Secret with neither, or with only one of username and password.
func credentialsFromSecret(s *corev1.Secret) (credentials, error) {
	if tok := strings.TrimSpace(string(s.Data[SecretKeyToken])); tok != "" {
		return credentials{authorization: "Bearer " + tok}, nil
	}
	user, pass := string(s.Data[SecretKeyUsername]), string(s.Data[SecretKeyPassword])
	switch {
	case user != "" && pass != "":
		return credentials{authorization: "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))}, nil
	case user != "" || pass != "":
		return credentials{}, fmt.Errorf("credentials Secret %s/%s: basic auth needs both keys %q and %q",
			s.Namespace, s.Name, SecretKeyUsername, SecretKeyPassword)
	}
	return credentials{}, fmt.Errorf("credentials Secret %s/%s has neither key %q nor keys %q and %q",
		s.Namespace, s.Name, SecretKeyToken, SecretKeyUsername, SecretKeyPassword)
}

// readCredentials reads the Secret namespace/name. errors: ErrTemplate (Secret not found or
// without usable keys), other API errors.
func (e *Engine) readCredentials(ctx context.Context, namespace, name string) (credentials, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	var s corev1.Secret
	if err := e.reader.Get(ctx, key, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return credentials{}, fmt.Errorf("%w: credentials Secret %s not found", ErrTemplate, key)
		}
		return credentials{}, fmt.Errorf("reading credentials Secret %s: %w", key, err)
	}
	c, err := credentialsFromSecret(&s)
	if err != nil {
		return credentials{}, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	return c, nil
}

// authTransport sets the Authorization header on requests to host (the credentials' own address)
// and on no other: the clients follow no redirects, and should one ever be followed the
// credentials still stay behind.
type authTransport struct {
	next          http.RoundTripper
	authorization string
	host          string
}

// RoundTrip implements http.RoundTripper; it leaves the caller's request untouched.
func (t authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.EqualFold(r.URL.Host, t.host) {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", t.authorization)
	return t.next.RoundTrip(r)
}
