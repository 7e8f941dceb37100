package mesh

import (
	"errors"
	"testing"
)

const digest = "sha256:4f1c7e6a0b7d3c2e9f8a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6"

func TestParseImage(t *testing.T) {
	for _, tc := range []struct {
		ref     string
		want    Image
		version string
	}{
		{ref: "cr.l5d.io/linkerd/proxy:edge-26.8.3",
			want: Image{Registry: "cr.l5d.io", Repository: "linkerd/proxy", Tag: "edge-26.8.3"}, version: "edge-26.8.3"},
		{ref: "registry.local:18080/linkerd/proxy:stable-2.10.2",
			want: Image{Registry: "registry.local:18080", Repository: "linkerd/proxy", Tag: "stable-2.10.2"}, version: "stable-2.10.2"},
		{ref: "cr.l5d.io/linkerd/proxy:edge-26.8.3@" + digest,
			want: Image{Registry: "cr.l5d.io", Repository: "linkerd/proxy", Tag: "edge-26.8.3", Digest: digest}, version: "edge-26.8.3"},
		{ref: "registry.local:18080/linkerd/proxy:stable-2.10.2@" + digest,
			want: Image{Registry: "registry.local:18080", Repository: "linkerd/proxy", Tag: "stable-2.10.2", Digest: digest}, version: "stable-2.10.2"},
		// A digest alone names no version.
		{ref: "cr.l5d.io/linkerd/proxy@" + digest,
			want: Image{Registry: "cr.l5d.io", Repository: "linkerd/proxy", Digest: digest}, version: ""},
		{ref: "registry.local:18080/linkerd/proxy@" + digest,
			want: Image{Registry: "registry.local:18080", Repository: "linkerd/proxy", Digest: digest}, version: ""},
		// No tag: not "latest", unknown; the port is not a tag.
		{ref: "cr.l5d.io/linkerd/proxy", want: Image{Registry: "cr.l5d.io", Repository: "linkerd/proxy"}, version: ""},
		{ref: "registry.local:18080/linkerd/proxy", want: Image{Registry: "registry.local:18080", Repository: "linkerd/proxy"}, version: ""},
		{ref: "localhost:5000/proxy:v1", want: Image{Registry: "localhost:5000", Repository: "proxy", Tag: "v1"}, version: "v1"},
		{ref: "localhost/proxy:v1", want: Image{Registry: "localhost", Repository: "proxy", Tag: "v1"}, version: "v1"},
		{ref: "[::1]:5000/istio/proxyv2:1.27.1", want: Image{Registry: "[::1]:5000", Repository: "istio/proxyv2", Tag: "1.27.1"}, version: "1.27.1"},
		{ref: "docker.io/istio/proxyv2:1.26.0-distroless",
			want: Image{Registry: "docker.io", Repository: "istio/proxyv2", Tag: "1.26.0-distroless"}, version: "1.26.0-distroless"},
		// Docker Hub short names have no registry.
		{ref: "istio/proxyv2:1.26.0", want: Image{Repository: "istio/proxyv2", Tag: "1.26.0"}, version: "1.26.0"},
		{ref: "proxy:edge-26.6.3", want: Image{Repository: "proxy", Tag: "edge-26.6.3"}, version: "edge-26.6.3"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			got, err := ParseImage(tc.ref)
			if err != nil {
				t.Fatalf("ParseImage: %v", err)
			}
			if got != tc.want {
				t.Errorf("ParseImage = %+v, want %+v", got, tc.want)
			}
			if v := ImageVersion(tc.ref); v != tc.version {
				t.Errorf("ImageVersion = %q, want %q", v, tc.version)
			}
		})
	}
}

func TestParseImageInvalid(t *testing.T) {
	for _, ref := range []string{
		"",
		"cr.l5d.io/linkerd/proxy:",                 // empty tag
		"cr.l5d.io/linkerd/proxy:edge 26",          // space in tag
		"cr.l5d.io/linkerd/proxy@sha256:xyz",       // bad digest
		"cr.l5d.io/linkerd/proxy:edge-26.8.3@",     // empty digest
		"cr.l5d.io/Linkerd/proxy:edge-26.8.3",      // upper case repository
		"registry.local:18080/:stable-2.10.2",      // empty repository
		"registry..local:18080/linkerd/proxy:v1",   // bad host
		"cr.l5d.io/linkerd//proxy:edge-26.8.3",     // empty path component
		"registry.local:port/linkerd/proxy:v1",     // bad port
		":edge-26.8.3",                             // no repository
		"cr.l5d.io/linkerd/proxy:-edge",            // tag starting with '-'
		"cr.l5d.io/linkerd/proxy:edge-26.8.3:more", // second tag
	} {
		t.Run(ref, func(t *testing.T) {
			if img, err := ParseImage(ref); !errors.Is(err, ErrInvalidImage) {
				t.Errorf("ParseImage(%q) = %+v, %v; want ErrInvalidImage", ref, img, err)
			}
			if v := ImageVersion(ref); v != "" {
				t.Errorf("ImageVersion(%q) = %q, want unknown", ref, v)
			}
		})
	}
}
