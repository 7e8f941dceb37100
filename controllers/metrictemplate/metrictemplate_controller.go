package metrictemplate

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Reconciler sets each MetricTemplate's Ready condition from its query.
type Reconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=sluice.dev,resources=metrictemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=sluice.dev,resources=metrictemplates/status,verbs=patch

// Reconcile validates the template's query and writes the Ready condition when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mt := &sluicev1.MetricTemplate{}
	if err := r.Get(ctx, req.NamespacedName, mt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	base := mt.DeepCopy()
	SetReady(mt)
	if equality.Semantic.DeepEqual(base.Status, mt.Status) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := r.Status().Patch(ctx, mt, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("patching status of metrictemplate %s/%s: %w", mt.Namespace, mt.Name, err))
	}
	return ctrl.Result{}, nil
}

// SetReady sets mt's Ready condition from its query: True with reason ValidQuery, or False with
// reason InvalidQuery and the parser's message.
func SetReady(mt *sluicev1.MetricTemplate) {
	cond := metav1.Condition{Type: sluicev1.ConditionReady, Status: metav1.ConditionTrue, Reason: sluicev1.ReasonValidQuery,
		Message: "The query renders and is valid PromQL", ObservedGeneration: mt.Generation}
	if vars := analysis.TemplateVariables(mt.Spec.Query); len(vars) > 0 {
		// Defined by each Canary's metric templateVariables: a Canary that lacks one is stalled
		// (InvalidQuery) before its run puts traffic on the canary.
		cond.Message += "; every Canary using it must set templateVariables " + strings.Join(vars, ", ")
	}
	if err := analysis.ValidateTemplateQuery(mt.Spec.Query); err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, sluicev1.ReasonInvalidQuery, err.Error()
	}
	apimeta.SetStatusCondition(&mt.Status.Conditions, cond)
	mt.Status.ObservedGeneration = mt.Generation
}

// SetupWithManager registers the controller; only spec changes (generation) trigger it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("metrictemplate").
		For(&sluicev1.MetricTemplate{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}
