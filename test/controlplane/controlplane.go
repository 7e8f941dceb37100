// Package controlplane simulates a mesh's control plane for tests and the demo as real
// Kubernetes objects: Linkerd's destination, identity and proxy-injector Deployments in namespace
// linkerd (images cr.l5d.io/linkerd/controller:VERSION with a linkerd-proxy container
// cr.l5d.io/linkerd/proxy:VERSION, labelled linkerd.io/control-plane-component as Linkerd labels
// them), and one istiod Deployment per Istio revision in istio-system. Upgrade rewrites the
// Deployments the way `linkerd upgrade | kubectl apply -f -` does. On the local kwok cluster the
// real Deployment controller rolls them out; on envtest (no controllers) testenv.MarkRolledOut
// writes the status a rolled-out Deployment would have. The simulated injector (test/injector) follows the
// proxy-injector Deployment: it injects its version, and nothing while it is unavailable.
package controlplane

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/mesh"
)

// Linkerd's simulated control plane.
const (
	// Namespace of Linkerd's control plane.
	Namespace = mesh.LinkerdNamespace
	// InjectorDeployment is the proxy injector's Deployment.
	InjectorDeployment = "linkerd-proxy-injector"
	// IstioNamespace of the istiod Deployments.
	IstioNamespace = mesh.IstioSystemNamespace
)

// linkerdDeployment is control-plane component c at version.
func linkerdDeployment(c, version string) *appsv1.Deployment {
	labels := map[string]string{mesh.LinkerdComponentLabel: c, "app": "linkerd-" + c}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "linkerd-" + c, Namespace: Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "linkerd-" + c}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels,
					Annotations: map[string]string{mesh.LinkerdProxyVersionAnnotation: version}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: c, Image: "cr.l5d.io/linkerd/controller:" + version},
					{Name: mesh.LinkerdProxyContainer, Image: "cr.l5d.io/linkerd/proxy:" + version},
				}},
			},
		},
	}
}

// InstallLinkerd creates namespace linkerd (labelled linkerd.io/is-control-plane=true) and the
// destination, identity and proxy-injector Deployments at version. errors: API errors.
func InstallLinkerd(ctx context.Context, c client.Client, version string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace,
		Labels: map[string]string{mesh.LinkerdControlPlaneLabel: "true"}}}
	if err := c.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	for _, comp := range mesh.LinkerdComponents {
		if err := c.Create(ctx, linkerdDeployment(comp, version)); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("creating the %s Deployment: %w", comp, err)
		}
	}
	return nil
}

// UpgradeLinkerd rewrites every control-plane Deployment to version, as `linkerd upgrade |
// kubectl apply -f -` does; their pods roll. errors: API errors.
func UpgradeLinkerd(ctx context.Context, c client.Client, version string) error {
	for _, comp := range mesh.LinkerdComponents {
		want := linkerdDeployment(comp, version)
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), d); err != nil {
			return fmt.Errorf("reading %s: %w", want.Name, err)
		}
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Template = want.Spec.Template
		if err := c.Patch(ctx, d, patch); err != nil {
			return fmt.Errorf("upgrading %s: %w", want.Name, err)
		}
	}
	return nil
}

// ScaleInjector sets the proxy injector's replicas (0 stops it). errors: API errors.
func ScaleInjector(ctx context.Context, c client.Client, replicas int32) error {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: InjectorDeployment}, d); err != nil {
		return fmt.Errorf("reading the proxy injector: %w", err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	return c.Patch(ctx, d, patch)
}

// InstallIstiod creates namespace istio-system and an istiod Deployment for revision (labels
// app=istiod, istio.io/rev=REVISION). errors: API errors.
func InstallIstiod(ctx context.Context, c client.Client, revision, image string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: IstioNamespace}}
	if err := c.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating namespace %s: %w", IstioNamespace, err)
	}
	labels := map[string]string{"app": mesh.IstiodApp, mesh.IstioRevLabel: revision}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "istiod-" + revision, Namespace: IstioNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "discovery", Image: image}}}}},
	}
	if err := c.Create(ctx, d); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating istiod %s: %w", revision, err)
	}
	return nil
}
