package canary

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/controllers/canary/plan"
)

// kindDeployment and kindDaemonSet are the target kinds Sluice delivers (spec.targetRef.kind; a
// DaemonSet runs blue/green only, which admission enforces).
const (
	kindDeployment = "Deployment"
	kindDaemonSet  = "DaemonSet"
)

// scaleToZeroKey is the node selector Sluice adds to a DaemonSet's pod template to run it on no
// node (a DaemonSet has no replica count): the canary DaemonSet between runs, as Flagger does. It
// is left out of the revision and out of the primary's template.
const scaleToZeroKey = "sluice.dev/scale-to-zero"

// workload is a target or its primary: a Deployment or a DaemonSet. obj is the typed object to
// hand to the client.
type workload interface {
	obj() client.Object
	kind() string
	// podTemplate is the workload's pod template, to read or change in place.
	podTemplate() *corev1.PodTemplateSpec
	selector() *metav1.LabelSelector
	// revisionTemplate is the pod template the revision is computed from (without Sluice's
	// scale-to-zero node selector).
	revisionTemplate() *corev1.PodTemplateSpec
	// summary is the workload as the plan sees it, running revision.
	summary(revision string) plan.Workload
	// replicas is spec.replicas (0 for a DaemonSet run on no node, nil for a DaemonSet that runs
	// on its nodes).
	replicas() *int32
	// scaleTo sets the replicas in the object (a DaemonSet: on no node for 0, on its nodes
	// otherwise) and reports whether that changed it.
	scaleTo(n int32) bool
	// copyWorkload is a deep copy.
	copyWorkload() workload
}

// newWorkload returns an empty workload of kind ("" is a Deployment).
func newWorkload(kind string) workload {
	if kind == kindDaemonSet {
		return daemonSet{&appsv1.DaemonSet{}}
	}
	return deployment{&appsv1.Deployment{}}
}

// asWorkload wraps a Deployment or DaemonSet; nil for anything else.
func asWorkload(o client.Object) workload {
	switch x := o.(type) {
	case *appsv1.Deployment:
		return deployment{x}
	case *appsv1.DaemonSet:
		return daemonSet{x}
	}
	return nil
}

type deployment struct{ d *appsv1.Deployment }

func (w deployment) obj() client.Object                        { return w.d }
func (w deployment) kind() string                              { return kindDeployment }
func (w deployment) podTemplate() *corev1.PodTemplateSpec      { return &w.d.Spec.Template }
func (w deployment) revisionTemplate() *corev1.PodTemplateSpec { return &w.d.Spec.Template }
func (w deployment) selector() *metav1.LabelSelector           { return w.d.Spec.Selector }
func (w deployment) replicas() *int32                          { return w.d.Spec.Replicas }
func (w deployment) copyWorkload() workload                    { return deployment{w.d.DeepCopy()} }
func (w deployment) summary(revision string) plan.Workload     { return workloadOf(w.d, revision) }
func (w deployment) scaleTo(n int32) bool {
	if ptr.Deref(w.d.Spec.Replicas, -1) == n {
		return false
	}
	w.d.Spec.Replicas = ptr.To(n)
	return true
}

type daemonSet struct{ d *appsv1.DaemonSet }

func (w daemonSet) obj() client.Object                   { return w.d }
func (w daemonSet) kind() string                         { return kindDaemonSet }
func (w daemonSet) podTemplate() *corev1.PodTemplateSpec { return &w.d.Spec.Template }
func (w daemonSet) selector() *metav1.LabelSelector      { return w.d.Spec.Selector }
func (w daemonSet) copyWorkload() workload               { return daemonSet{w.d.DeepCopy()} }

func (w daemonSet) revisionTemplate() *corev1.PodTemplateSpec {
	if _, ok := w.d.Spec.Template.Spec.NodeSelector[scaleToZeroKey]; !ok {
		return &w.d.Spec.Template
	}
	tpl := w.d.Spec.Template.DeepCopy()
	withoutScaleToZero(tpl)
	return tpl
}

// withoutScaleToZero removes Sluice's scale-to-zero node selector from tpl.
func withoutScaleToZero(tpl *corev1.PodTemplateSpec) {
	if _, ok := tpl.Spec.NodeSelector[scaleToZeroKey]; !ok {
		return
	}
	sel := maps.Clone(tpl.Spec.NodeSelector)
	delete(sel, scaleToZeroKey)
	if len(sel) == 0 {
		sel = nil
	}
	tpl.Spec.NodeSelector = sel
}

func (w daemonSet) replicas() *int32 {
	if _, ok := w.d.Spec.Template.Spec.NodeSelector[scaleToZeroKey]; ok {
		return ptr.To[int32](0)
	}
	return nil
}

func (w daemonSet) scaleTo(n int32) bool {
	_, off := w.d.Spec.Template.Spec.NodeSelector[scaleToZeroKey]
	switch {
	case n == 0 && !off:
		if w.d.Spec.Template.Spec.NodeSelector == nil {
			w.d.Spec.Template.Spec.NodeSelector = map[string]string{}
		}
		w.d.Spec.Template.Spec.NodeSelector[scaleToZeroKey] = "true"
		return true
	case n > 0 && off:
		withoutScaleToZero(&w.d.Spec.Template)
		return true
	}
	return false
}

// summary reads a DaemonSet's rollout from its status, per node: desired is
// desiredNumberScheduled (0 while it is scaled to zero), ready counts only nodes whose updated pod
// can be ready (never more than updatedNumberScheduled), and it is rolled out only when the
// DaemonSet controller saw its generation and every node it should run on runs the current
// template: a node still running an old pod keeps it from counting as ready.
func (w daemonSet) summary(revision string) plan.Workload {
	s := w.d.Status
	desired := s.DesiredNumberScheduled
	if w.replicas() != nil {
		desired = 0
	}
	return plan.Workload{
		Exists: true, Revision: revision, Desired: desired,
		Ready: min(s.NumberReady, s.UpdatedNumberScheduled), Updated: s.UpdatedNumberScheduled,
		RolledOut: s.ObservedGeneration >= w.d.Generation && s.UpdatedNumberScheduled >= s.DesiredNumberScheduled &&
			s.NumberMisscheduled == 0,
	}
}
