package canary

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=list

// podDiagnosisGrace is how long an initialization waits for its primary before the primary's pods
// are read for the cause: pods normally start well within it, and a cause (an image that cannot
// be pulled, no node that fits) takes the kubelet and the scheduler some seconds to report anyway.
const podDiagnosisGrace = 10 * time.Second

// primaryWaitingOn says, while the Canary initializes and its primary is not ready, what the
// primary waits on: its Deployment's ReplicaFailure (a ReplicaSet's FailedCreate: a quota, an
// admission webhook) or Progressing=False condition, else the reasons its pods are not ready
// (ImagePullBackOff, Unschedulable, ...). "" when nothing names a cause. The pods are read around
// the cache, only in this state and once the initialization has waited podDiagnosisGrace, so a
// Canary at rest costs no pod watch and a thousand Canaries initializing at once cost no pod
// list each per tick while their primaries start as they should.
func (r *Reconciler) primaryWaitingOn(ctx context.Context, now time.Time, canary *sluicev1.Canary, primary workload, ready bool) string {
	phase := canary.Status.Phase
	if ready || primary == nil || (phase != "" && phase != sluicev1.CanaryPhaseInitializing) {
		return ""
	}
	if d, ok := primary.obj().(*appsv1.Deployment); ok {
		if why := deploymentProblem(d); why != "" {
			return why
		}
	}
	since := canary.Status.LastTransitionTime
	if since == nil || now.Sub(since.Time) < podDiagnosisGrace {
		return ""
	}
	reader := client.Reader(r.Client)
	if r.APIReader != nil {
		reader = r.APIReader
	}
	sel := primary.selector()
	if sel == nil || len(sel.MatchLabels) == 0 {
		return ""
	}
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods, client.InNamespace(primary.obj().GetNamespace()), client.MatchingLabels(sel.MatchLabels)); err != nil {
		log.FromContext(ctx).Info("Listing the primary's pods failed", "error", err.Error())
		return ""
	}
	return podProblems(pods.Items)
}

// deploymentProblem is the Deployment's own word on why it cannot roll out, or "".
func deploymentProblem(d *appsv1.Deployment) string {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return fmt.Sprintf("deployment %s: %s: %s", d.Name, c.Reason, c.Message)
		}
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("deployment %s: %s: %s", d.Name, c.Reason, c.Message)
		}
	}
	return ""
}

// podProblems names why pods are not ready: an unschedulable pod, a container waiting
// (ImagePullBackOff, CrashLoopBackOff, ...) or terminated with an error; at most three, sorted.
func podProblems(pods []corev1.Pod) string {
	seen := map[string]bool{}
	var out []string
	add := func(pod *corev1.Pod, reason, msg string) {
		key := reason + msg
		if seen[key] {
			return
		}
		seen[key] = true
		s := fmt.Sprintf("pod %s: %s", pod.Name, reason)
		if msg != "" {
			s += ": " + msg
		}
		out = append(out, s)
	}
	for i := range pods {
		pod := &pods[i]
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				add(pod, c.Reason, c.Message)
			}
		}
		statuses := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
		for _, cs := range statuses {
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "ContainerCreating" &&
				cs.State.Waiting.Reason != "PodInitializing":
				add(pod, fmt.Sprintf("container %s %s", cs.Name, cs.State.Waiting.Reason), cs.State.Waiting.Message)
			case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
				add(pod, fmt.Sprintf("container %s terminated (%s, exit code %d)", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode),
					cs.State.Terminated.Message)
			}
		}
	}
	sort.Strings(out)
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("and %d more", len(out)-3))
	}
	return strings.Join(out, "; ")
}
