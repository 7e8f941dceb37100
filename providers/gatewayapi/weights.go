package gatewayapi

import (
	"errors"
	"fmt"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// maxBackendWeight is the largest backendRef weight the HTTPRoute schema accepts.
const maxBackendWeight = 1_000_000

// errNoBackend means no rule sends traffic to the apex, primary or canary Service.
var errNoBackend = errors.New("no backendRef carries traffic to the Canary's Services")

// role is what a backendRef is to one Canary.
type role int

const (
	roleOther   role = iota // a backend Sluice leaves alone
	roleApex                // the apex Service, not yet split
	rolePrimary             // <apex>-primary (or a primary/canary pair in a segment)
	roleCanary              // <apex>-canary
)

// services identifies a Canary's Services among an HTTPRoute's backendRefs.
type services struct {
	namespace string
	names     sluicev1.ServiceNames
}

// role classifies ref: a Service (group "", kind Service, both defaults) in the route's namespace
// named after the apex, primary or canary Service.
func (s services) role(ref gwv1.BackendObjectReference) role {
	if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Service") ||
		(ref.Namespace != nil && string(*ref.Namespace) != s.namespace) {
		return roleOther
	}
	switch string(ref.Name) {
	case s.names.Apex:
		return roleApex
	case s.names.Primary:
		return rolePrimary
	case s.names.Canary:
		return roleCanary
	}
	return roleOther
}

// weightOf is a backendRef's weight; unset means the schema default 1.
func weightOf(ref *gwv1.HTTPBackendRef) int64 {
	if ref == nil {
		return 0
	}
	if ref.Weight == nil {
		return 1
	}
	return int64(*ref.Weight)
}

// segment is one backend of a rule as Sluice sees it: a foreign backend (roleOther), an apex
// backend not yet split (roleApex), or a primary/canary pair (rolePrimary), written by Sluice as a
// primary backendRef directly followed by its canary backendRef. Either half of a pair may be nil
// when someone removed it; writing the pair puts it back.
type segment struct {
	role            role
	ref             *gwv1.HTTPBackendRef // roleOther, roleApex
	primary, canary *gwv1.HTTPBackendRef // rolePrimary
}

func (g segment) pairWeights() (primary, canary int64) {
	return weightOf(g.primary), weightOf(g.canary)
}

// segments splits a rule's backendRefs into segments, in order.
func (s services) segments(refs []gwv1.HTTPBackendRef) []segment {
	var out []segment
	for i := 0; i < len(refs); i++ {
		ref := &refs[i]
		switch s.role(ref.BackendObjectReference) {
		case roleApex:
			out = append(out, segment{role: roleApex, ref: ref})
		case rolePrimary:
			g := segment{role: rolePrimary, primary: ref}
			if i+1 < len(refs) && s.role(refs[i+1].BackendObjectReference) == roleCanary {
				g.canary = &refs[i+1]
				i++
			}
			out = append(out, g)
		case roleCanary:
			out = append(out, segment{role: rolePrimary, canary: ref})
		default:
			out = append(out, segment{role: roleOther, ref: ref})
		}
	}
	return out
}

// manages reports whether any backend of refs is the apex, primary or canary Service.
func (s services) manages(refs []gwv1.HTTPBackendRef) bool {
	for i := range refs {
		if s.role(refs[i].BackendObjectReference) != roleOther {
			return true
		}
	}
	return false
}

// hasPairs reports whether any rule holds a primary or canary backendRef (Sluice edited the route).
func (s services) hasPairs(rules []gwv1.HTTPRouteRule) bool {
	for _, rule := range rules {
		for i := range rule.BackendRefs {
			if r := s.role(rule.BackendRefs[i].BackendObjectReference); r == rolePrimary || r == roleCanary {
				return true
			}
		}
	}
	return false
}

// readWeights returns the split the rules give primary and canary, in percent. A pair with weights
// (p, c) and p+c = u*TotalWeight carries the split (p/u, c/u); pairs at weight 0/0 carry no traffic
// and are skipped, and so are A/B and session-affinity rules (see withABRules, withExtras). With countApex, an apex backend not yet
// split with weight > 0 counts as 100/0: its traffic goes to the apex Service, which selects the
// primary.
// errors: errNoBackend (wrapped) when nothing counts; a pair whose weights do not sum to a multiple of
// TotalWeight or do not divide into whole percent; pairs (in one rule or across rules) that disagree.
func (s services) readWeights(rules []gwv1.HTTPRouteRule, countApex bool) (providers.Weights, error) {
	var (
		found bool
		first providers.Weights
		where string
	)
	observe := func(w providers.Weights, at string) error {
		if !found {
			found, first, where = true, w, at
			return nil
		}
		if w != first {
			return fmt.Errorf("managed backends disagree: %s has primary=%d canary=%d, %s has primary=%d canary=%d",
				where, first.Primary, first.Canary, at, w.Primary, w.Canary)
		}
		return nil
	}
	for i, rule := range rules {
		if isCopyRule(rule) {
			continue
		}
		for _, g := range s.segments(rule.BackendRefs) {
			switch g.role {
			case roleApex:
				if countApex && weightOf(g.ref) > 0 {
					if err := observe(providers.Weights{Primary: providers.TotalWeight}, ruleName(i, rule)+" (backend "+s.names.Apex+" not split)"); err != nil {
						return providers.Weights{}, err
					}
				}
			case rolePrimary:
				p, c := g.pairWeights()
				total := p + c
				if total == 0 {
					continue
				}
				if total%providers.TotalWeight != 0 || c%(total/providers.TotalWeight) != 0 {
					return providers.Weights{}, fmt.Errorf("%s: weights %s=%d and %s=%d do not split %d%% of the traffic into whole percent (they must sum to a multiple of %d)",
						ruleName(i, rule), s.names.Primary, p, s.names.Canary, c, providers.TotalWeight, providers.TotalWeight)
				}
				u := total / providers.TotalWeight
				if err := observe(providers.Weights{Primary: int32(p / u), Canary: int32(c / u)}, ruleName(i, rule)); err != nil {
					return providers.Weights{}, err
				}
			}
		}
	}
	if !found {
		return providers.Weights{}, fmt.Errorf("%w (%s, %s or %s with weight > 0)", errNoBackend, s.names.Apex, s.names.Primary, s.names.Canary)
	}
	return first, nil
}

// splitRules returns rules with every apex backendRef split into a primary/canary pair and every
// pair set to w. Rules without apex, primary or canary backends are returned unchanged.
// errors: weights beyond the schema's maximum of 1,000,000.
func (s services) splitRules(rules []gwv1.HTTPRouteRule, w providers.Weights) ([]gwv1.HTTPRouteRule, error) {
	out := make([]gwv1.HTTPRouteRule, len(rules))
	for i, rule := range rules {
		if !s.manages(rule.BackendRefs) {
			out[i] = rule
			continue
		}
		split, err := s.splitRule(rule, w)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ruleName(i, rule), err)
		}
		out[i] = split
	}
	return out, nil
}

// splitRule rewrites one rule's backendRefs. Each apex backendRef becomes two copies of itself (same
// port, filters, group, kind and namespace) naming the primary and the canary Service, with its
// weight W split between them. Every other backendRef keeps its weight when the apex weights are
// multiples of 100; otherwise the other weights in the rule are multiplied by the smallest factor
// that makes the split exact, so every other backend keeps its share of the rule's traffic. A rule
// whose only backends are the Canary's gets pairs summing to 100. An existing pair keeps its
// total weight (a pair edited off the grid is rounded to the nearest multiple of 100). The result
// never has all backends at weight 0.
func (s services) splitRule(rule gwv1.HTTPRouteRule, w providers.Weights) (gwv1.HTTPRouteRule, error) {
	segs := s.segments(rule.BackendRefs)
	const total = int64(providers.TotalWeight)

	var g int64 // gcd of the non-zero apex weights
	others := false
	for _, seg := range segs {
		switch seg.role {
		case roleApex:
			g = gcd(g, weightOf(seg.ref))
		case roleOther:
			others = others || weightOf(seg.ref) > 0
		case rolePrimary:
			p, c := seg.pairWeights()
			others = others || p+c > 0
		}
	}
	// k scales every backend already in the rule when apex backends join a rule with other traffic.
	k := int64(1)
	if others && g > 0 {
		k = total / gcd(total, g)
	}

	// units[i] is the multiple of (w.Primary, w.Canary) segment i gets.
	units := make([]int64, len(segs))
	live := false
	for i, seg := range segs {
		switch seg.role {
		case roleOther:
			live = live || weightOf(seg.ref) > 0
		case roleApex:
			switch W := weightOf(seg.ref); {
			case W == 0:
				units[i] = 0
			case others:
				units[i] = W * k / total
			default:
				units[i] = W / g
			}
		case rolePrimary:
			p, c := seg.pairWeights()
			switch sum := (p + c) * k; {
			case sum == 0:
				units[i] = 0
			case sum%total == 0:
				units[i] = sum / total
			default: // someone edited the weights off the grid: round to the nearest unit
				units[i] = max(1, (sum+total/2)/total)
			}
		}
		live = live || units[i] > 0
	}
	if !live { // never leave a rule with every backend at weight 0
		for i, seg := range segs {
			if seg.role != roleOther {
				units[i] = 1
			}
		}
	}

	out := *rule.DeepCopy()
	out.BackendRefs = make([]gwv1.HTTPBackendRef, 0, len(rule.BackendRefs)+len(segs))
	for i, seg := range segs {
		switch seg.role {
		case roleOther:
			ref := seg.ref.DeepCopy()
			if k != 1 {
				if err := setWeight(ref, weightOf(seg.ref)*k); err != nil {
					return gwv1.HTTPRouteRule{}, err
				}
			}
			out.BackendRefs = append(out.BackendRefs, *ref)
		case roleApex, rolePrimary:
			primary, canary := s.pairRefs(seg)
			if err := setWeight(primary, units[i]*int64(w.Primary)); err != nil {
				return gwv1.HTTPRouteRule{}, err
			}
			if err := setWeight(canary, units[i]*int64(w.Canary)); err != nil {
				return gwv1.HTTPRouteRule{}, err
			}
			out.BackendRefs = append(out.BackendRefs, *primary, *canary)
		}
	}
	return out, nil
}

// pairRefs returns copies of a segment's primary and canary backendRefs. A missing half (and both
// halves of an apex backend) is a copy of the other backendRef naming the right Service.
func (s services) pairRefs(seg segment) (primary, canary *gwv1.HTTPBackendRef) {
	template := seg.ref
	if template == nil {
		template = seg.primary
	}
	if template == nil {
		template = seg.canary
	}
	primary, canary = seg.primary, seg.canary
	if seg.role == roleApex {
		primary, canary = nil, nil
	}
	if primary == nil {
		primary = template.DeepCopy()
		primary.Name = gwv1.ObjectName(s.names.Primary)
	} else {
		primary = primary.DeepCopy()
	}
	if canary == nil {
		canary = template.DeepCopy()
		canary.Name = gwv1.ObjectName(s.names.Canary)
	} else {
		canary = canary.DeepCopy()
	}
	return primary, canary
}

// setWeight sets ref's weight, keeping the pointer untouched when the value does not change.
// errors: a weight above the schema's maximum.
func setWeight(ref *gwv1.HTTPBackendRef, weight int64) error {
	if weight > maxBackendWeight {
		return fmt.Errorf("backend %s would need weight %d, above the maximum %d", ref.Name, weight, maxBackendWeight)
	}
	if ref.Weight != nil && int64(*ref.Weight) == weight {
		return nil
	}
	v := int32(weight)
	ref.Weight = &v
	return nil
}

// ruleName names a rule in messages: its index and, when set, its name.
func ruleName(i int, rule gwv1.HTTPRouteRule) string {
	if rule.Name != nil && *rule.Name != "" {
		return fmt.Sprintf("rule %d (%s)", i, *rule.Name)
	}
	return fmt.Sprintf("rule %d", i)
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// unsplitRules reconstructs the user's rules from rules Sluice split, for when the recorded
// original is lost: each primary/canary pair becomes one backendRef to the apex Service (port and
// filters of the pair's primary half) weighing the pair's total, so every backend keeps its share
// of the traffic. Weights may differ from what the user wrote (100 where they wrote 1).
func (s services) unsplitRules(rules []gwv1.HTTPRouteRule) []gwv1.HTTPRouteRule {
	out := make([]gwv1.HTTPRouteRule, len(rules))
	for i, rule := range rules {
		if !s.hasPairs([]gwv1.HTTPRouteRule{rule}) {
			out[i] = rule
			continue
		}
		out[i] = *rule.DeepCopy()
		out[i].BackendRefs = nil
		for _, seg := range s.segments(rule.BackendRefs) {
			switch seg.role {
			case rolePrimary:
				primary, _ := s.pairRefs(seg)
				p, c := seg.pairWeights()
				primary.Name = gwv1.ObjectName(s.names.Apex)
				primary.Weight = ptr.To(int32(min(p+c, maxBackendWeight)))
				out[i].BackendRefs = append(out[i].BackendRefs, *primary)
			default:
				out[i].BackendRefs = append(out[i].BackendRefs, *seg.ref.DeepCopy())
			}
		}
	}
	return out
}
