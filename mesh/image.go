package mesh

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Image is a parsed container image reference: [registry[:port]/]repository[:tag][@digest].
type Image struct {
	// Registry is the host (with its port, if any), e.g. registry.local:18080; empty when the
	// reference names none (Docker Hub).
	Registry string
	// Repository is the path, e.g. linkerd/proxy.
	Repository string
	// Tag, e.g. edge-26.8.3; empty when there is none.
	Tag string
	// Digest, e.g. sha256:0123…; empty when there is none.
	Digest string
}

// ErrInvalidImage is returned for references that do not parse.
var ErrInvalidImage = errors.New("invalid image reference")

var (
	tagRE       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestRE    = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-fA-F0-9]{32,}$`)
	componentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	hostRE      = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:]+\])(?::[0-9]+)?$`)
)

// ParseImage parses ref. The registry is the first path component when it looks like a host
// (contains a dot or a port, or is localhost), so "registry.local:18080/linkerd/proxy" has no tag
// and "registry.local:18080/linkerd/proxy:stable-2.10.2" has tag stable-2.10.2.
// errors: ErrInvalidImage naming what is wrong.
func ParseImage(ref string) (Image, error) {
	var img Image
	name := ref
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, img.Digest = name[:i], name[i+1:]
		if !digestRE.MatchString(img.Digest) {
			return Image{}, fmt.Errorf("%w %q: digest %q", ErrInvalidImage, ref, img.Digest)
		}
	}
	// A tag follows the last colon after the last slash; a colon before it is a registry port.
	if colon := strings.LastIndexByte(name, ':'); colon > strings.LastIndexByte(name, '/') {
		name, img.Tag = name[:colon], name[colon+1:]
		if !tagRE.MatchString(img.Tag) {
			return Image{}, fmt.Errorf("%w %q: tag %q", ErrInvalidImage, ref, img.Tag)
		}
	}
	if first, rest, ok := strings.Cut(name, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost" || strings.HasPrefix(first, "[")) {
		if !hostRE.MatchString(first) {
			return Image{}, fmt.Errorf("%w %q: registry %q", ErrInvalidImage, ref, first)
		}
		img.Registry, name = first, rest
	}
	if name == "" {
		return Image{}, fmt.Errorf("%w %q: no repository", ErrInvalidImage, ref)
	}
	for _, c := range strings.Split(name, "/") {
		if !componentRE.MatchString(c) {
			return Image{}, fmt.Errorf("%w %q: repository component %q", ErrInvalidImage, ref, c)
		}
	}
	img.Repository = name
	return img, nil
}

// ImageVersion returns the version an image reference names: its tag. A reference without a tag
// (a digest alone, or nothing: "latest" is not a version) or that does not parse gives "", an
// unknown version.
func ImageVersion(ref string) string {
	img, err := ParseImage(ref)
	if err != nil {
		return ""
	}
	return img.Tag
}
