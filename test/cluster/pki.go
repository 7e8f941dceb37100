package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is how long every per-run certificate is valid; a cluster never lives that long.
const certValidity = 30 * 24 * time.Hour

// apiserverSANs are the names kube-apiserver's serving certificate is valid for: the loopback
// address we listen on, the first address of the service range (the in-cluster "kubernetes"
// Service) and the DNS names of that Service.
var apiserverSANs = []string{
	"127.0.0.1", "10.96.0.1", "localhost",
	"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
}

// authority is the per-run certificate authority. Every key is ECDSA P-256: generating one takes
// well under a millisecond, where an RSA-2048 key takes tens to hundreds.
type authority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "sluice-test-cluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-signing CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der)}, nil
}

// leaf is a certificate signed by the authority and its key, PEM-encoded.
type leaf struct {
	certPEM, keyPEM []byte
}

// issue signs a certificate for subject. hosts (IP addresses or DNS names) become SANs; serving
// certificates get ExtKeyUsageServerAuth, the others ExtKeyUsageClientAuth.
func (a *authority) issue(subject pkix.Name, serving bool, hosts ...string) (leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return leaf{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               subject,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if serving {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return leaf{}, fmt.Errorf("signing certificate for %s: %w", subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return leaf{}, err
	}
	return leaf{certPEM: pemBlock("CERTIFICATE", der), keyPEM: pemBlock("PRIVATE KEY", keyDER)}, nil
}

// pkiFiles are the paths of the files writePKI writes into Dir/pki.
type pkiFiles struct {
	dir                                        string
	caCert                                     string
	apiserverCert, apiserverKey                string
	adminTokens                                string
	frontProxyCert, frontProxyKey              string
	serviceAccountKey, serviceAccountPublicKey string
}

func newPKIFiles(dir string) pkiFiles {
	p := func(name string) string { return filepath.Join(dir, name) }
	return pkiFiles{
		dir:                     dir,
		caCert:                  p("ca.crt"),
		apiserverCert:           p("apiserver.crt"),
		apiserverKey:            p("apiserver.key"),
		adminTokens:             p("tokens.csv"),
		frontProxyCert:          p("front-proxy-client.crt"),
		frontProxyKey:           p("front-proxy-client.key"),
		serviceAccountKey:       p("sa.key"),
		serviceAccountPublicKey: p("sa.pub"),
	}
}

// writePKI creates the CA, kube-apiserver's serving certificate, the front-proxy client
// certificate, the service-account signing key pair and the cluster admin's bearer token (group
// system:masters), and writes them as files. It returns the CA and the admin's token.
//
// The admin authenticates with a token, as in-cluster controllers do with their service-account
// tokens: the apiserver checks a token file's token with a map lookup, while a client certificate
// costs a chain verification on every request (twice here, as the front proxy trusts the same CA),
// which a benchmark of thousands of rollouts would count against every client.
func writePKI(files pkiFiles) (*authority, string, error) {
	ca, err := newAuthority()
	if err != nil {
		return nil, "", err
	}
	apiserver, err := ca.issue(pkix.Name{CommonName: "kube-apiserver"}, true, apiserverSANs...)
	if err != nil {
		return nil, "", err
	}
	tokenBytes := make([]byte, 32)
	_, _ = rand.Read(tokenBytes) // never fails (crypto/rand)
	adminToken := hex.EncodeToString(tokenBytes)
	frontProxy, err := ca.issue(pkix.Name{CommonName: frontProxyClientName}, false)
	if err != nil {
		return nil, "", err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	saKeyDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return nil, "", err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(files.dir, 0o700); err != nil {
		return nil, "", err
	}
	for path, data := range map[string][]byte{
		files.caCert:                  ca.certPEM,
		files.apiserverCert:           apiserver.certPEM,
		files.apiserverKey:            apiserver.keyPEM,
		files.adminTokens:             []byte(adminToken + ",sluice-admin,sluice-admin,\"system:masters\"\n"),
		files.frontProxyCert:          frontProxy.certPEM,
		files.frontProxyKey:           frontProxy.keyPEM,
		files.serviceAccountKey:       pemBlock("PRIVATE KEY", saKeyDER),
		files.serviceAccountPublicKey: pemBlock("PUBLIC KEY", saPubDER),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, "", err
		}
	}
	return ca, adminToken, nil
}

// servingCert issues a TLS serving certificate for hosts signed by the authority.
func (a *authority) servingCert(hosts ...string) (tls.Certificate, error) {
	l, err := a.issue(pkix.Name{CommonName: hosts[0]}, true, hosts...)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(l.certPEM, l.keyPEM)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}
