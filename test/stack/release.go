package stack

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
)

// Release is one change of a Canary's target, followed until its run ends.
type Release struct {
	// Namespace and Canary name the Canary; Deployment its target (default Canary).
	Namespace, Canary, Deployment string
	// Image replaces the first container's image.
	Image string
	// Annotations are merged into the pod template's annotations (the simulated mesh reads the
	// version's error rate and latency from them).
	Annotations map[string]string
	// Replicas, when set, is written with the image (as an autoscaler or the release would).
	Replicas *int32
	// Timeout bounds the run. Default 5 minutes.
	Timeout time.Duration
	// Out receives the live timeline. Optional.
	Out io.Writer
}

// Outcome is how a release ended.
type Outcome struct {
	// Phase is the terminal phase: Succeeded or Failed.
	Phase sluicev1.CanaryPhase
	// Weights are the distinct canary weights of the run, in order (0 excluded).
	Weights []int32
	// FinalWeight is the canary weight at the end.
	FinalWeight int32
	// FailedChecks at the end.
	FailedChecks int32
	// PrimaryImage is the primary Deployment's image at the end.
	PrimaryImage string
	// FailedValues lists "metric=value" of every failing verdict seen during the run.
	FailedValues []string
	// Duration of the run, from the change to the terminal phase.
	Duration time.Duration
	// Timeline holds the printed lines.
	Timeline []string
}

// RunRelease changes the target and follows the Canary until the run of the new revision ends,
// writing a line to r.Out for every change of phase, weight, failed checks or check results.
// errors: the target or Canary cannot be read or changed, the run does not end within Timeout.
func (s *Stack) RunRelease(ctx context.Context, r Release) (Outcome, error) {
	if r.Deployment == "" {
		r.Deployment = r.Canary
	}
	if r.Timeout == 0 {
		r.Timeout = 5 * time.Minute
	}
	key := client.ObjectKey{Namespace: r.Namespace, Name: r.Canary}
	before := &sluicev1.Canary{}
	if err := s.Client.Get(ctx, key, before); err != nil {
		return Outcome{}, fmt.Errorf("reading canary: %w", err)
	}
	if err := s.changeTarget(ctx, r); err != nil {
		return Outcome{}, err
	}
	start := time.Now()
	tl := timeline{out: r.Out, start: start, threshold: plan.Threshold(before.Spec)}
	var out Outcome
	deadline := time.Now().Add(r.Timeout)
	for {
		c := &sluicev1.Canary{}
		if err := s.Client.Get(ctx, key, c); err != nil {
			return out, fmt.Errorf("reading canary: %w", err)
		}
		st := c.Status
		newRun := st.LastAppliedSpec != before.Status.LastAppliedSpec
		if newRun {
			tl.observe(c) // the previous run's status is not part of this release's timeline
		}
		if st.CanaryWeight > 0 && (len(out.Weights) == 0 || out.Weights[len(out.Weights)-1] != st.CanaryWeight) &&
			st.Phase == sluicev1.CanaryPhaseProgressing {
			out.Weights = append(out.Weights, st.CanaryWeight)
		}
		for _, m := range st.Analysis {
			if m.Verdict == sluicev1.VerdictFail || m.Verdict == sluicev1.VerdictNoData || m.Verdict == sluicev1.VerdictError {
				v := m.Name + "=" + m.Value
				if len(out.FailedValues) == 0 || out.FailedValues[len(out.FailedValues)-1] != v {
					out.FailedValues = append(out.FailedValues, v)
				}
			}
		}
		if newRun && (st.Phase == sluicev1.CanaryPhaseSucceeded || st.Phase == sluicev1.CanaryPhaseFailed) {
			out.Phase, out.FinalWeight, out.FailedChecks = st.Phase, st.CanaryWeight, st.FailedChecks
			out.Duration = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			out.Timeline = tl.lines
			return out, fmt.Errorf("release did not finish within %s (phase %s, weight %d)", r.Timeout, st.Phase, st.CanaryWeight)
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	primary := &appsv1.Deployment{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Deployment + "-primary"}, primary); err != nil {
		return out, fmt.Errorf("reading primary: %w", err)
	}
	out.PrimaryImage = primary.Spec.Template.Spec.Containers[0].Image
	out.Timeline = tl.lines
	return out, nil
}

// changeTarget sets the new image and pod-template annotations of the target.
func (s *Stack) changeTarget(ctx context.Context, r Release) error {
	d := &appsv1.Deployment{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Deployment}, d); err != nil {
		return fmt.Errorf("reading deployment %s: %w", r.Deployment, err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	if r.Image != "" {
		d.Spec.Template.Spec.Containers[0].Image = r.Image
	}
	if r.Replicas != nil {
		d.Spec.Replicas = r.Replicas
	}
	if len(r.Annotations) > 0 {
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		maps.Copy(d.Spec.Template.Annotations, r.Annotations)
	}
	if err := s.Client.Patch(ctx, d, patch); err != nil {
		return fmt.Errorf("updating deployment %s: %w", r.Deployment, err)
	}
	return nil
}

// timeline prints one line per observed change of a Canary's run.
type timeline struct {
	out       io.Writer
	start     time.Time
	threshold int32
	last      string
	lines     []string
}

func (t *timeline) observe(c *sluicev1.Canary) {
	st := c.Status
	var metrics []string
	for _, m := range st.Analysis {
		v := m.Value
		if v == "" {
			v = "-"
		}
		metrics = append(metrics, fmt.Sprintf("%s %s %s %s", m.Name, v, m.Verdict, m.ThresholdRange))
	}
	key := fmt.Sprintf("%-16s weight %3d  failed %d/%d  %s", st.Phase, st.CanaryWeight, st.FailedChecks, t.threshold,
		strings.Join(metrics, "  "))
	if key == t.last {
		return
	}
	t.last = key
	el := time.Since(t.start).Round(time.Second)
	line := fmt.Sprintf("%s  +%-5s %s", time.Now().Format("15:04:05"), el, key)
	t.lines = append(t.lines, line)
	if t.out != nil {
		fmt.Fprintln(t.out, line)
	}
}

// WaitPhase waits until the Canary reaches phase. errors: timeout (with the Canary's
// conditions), a cancelled ctx.
func (s *Stack) WaitPhase(ctx context.Context, namespace, name string, phase sluicev1.CanaryPhase, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &sluicev1.Canary{}
	for {
		err := s.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, c)
		if err == nil && c.Status.Phase == phase {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("canary %s/%s did not reach %s within %s (phase %q, conditions %v)",
				namespace, name, phase, timeout, c.Status.Phase, c.Status.Conditions)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
