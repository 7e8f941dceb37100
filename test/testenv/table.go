package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Table fetches the server-side table of a collection or object, what `kubectl get` prints;
// path is the API path, e.g. /apis/sluice.dev/v1alpha1/namespaces/NS/canaries.
// errors: the request failing or answered with a non-200 status, an undecodable table.
func (e *Env) Table(ctx context.Context, path string) (*metav1.Table, error) {
	hc, err := rest.HTTPClientFor(e.Config)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(e.Config.Host, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s as table: %s: %s", path, resp.Status, body)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		return nil, fmt.Errorf("decoding table of %s: %w", path, err)
	}
	return table, nil
}
