package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// podReadyStage is the name of kwok's default Stage that marks a Pending pod Running and Ready.
const podReadyStage = "pod-ready"

// writeKwokConfig copies kwok's Stage objects from src to dst. With a positive delay, the pod-ready
// Stage gets spec.delay set to exactly that delay (durationMilliseconds and
// jitterDurationMilliseconds both set to it), so rollouts progress visibly pod by pod. With a
// positive podParallelism, a KwokConfiguration setting options.podPlayStageParallelism follows.
func writeKwokConfig(src, dst string, delay time.Duration, podParallelism int) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("reading kwok Stage objects (built by `hack/build-tools.sh cluster`): %w", err)
	}
	if delay > 0 {
		if data, err = withPodReadyDelay(src, data, delay); err != nil {
			return err
		}
	}
	if podParallelism > 0 {
		// kwok does not default a KwokConfiguration it reads: every option is kwok v0.8's default
		// (SetObjectDefaults_KwokConfiguration) but the pods' parallelism; flags override them.
		conf, err := yaml.Marshal(map[string]any{
			"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration",
			"options": map[string]any{
				"cidr": "10.0.0.0/24", "manageAllNodes": false, "enableDebuggingHandlers": true,
				"enableContentionProfiling": false, "enableProfilingHandler": true,
				"podPlayStageParallelism": podParallelism, "nodePlayStageParallelism": 4, "nodeLeaseParallelism": 4,
				"podsOnNodeSyncParallelism": 1, "enablePodsOnNodeSyncListPager": true, "enablePodsOnNodeSyncStreamWatch": false,
			},
		})
		if err != nil {
			return err
		}
		data = append(append(data, "\n---\n"...), conf...)
	}
	return os.WriteFile(dst, data, 0o644)
}

// withPodReadyDelay returns the Stage objects in data (read from src) with spec.delay of the
// pod-ready Stage set to delay. errors: data does not parse, or has no pod-ready Stage.
func withPodReadyDelay(src string, data []byte, delay time.Duration) ([]byte, error) {
	var out bytes.Buffer
	found := false
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", src, err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", src, err)
		}
		if obj == nil {
			continue
		}
		if meta, _ := obj["metadata"].(map[string]any); obj["kind"] == "Stage" && meta["name"] == podReadyStage {
			spec, _ := obj["spec"].(map[string]any)
			if spec == nil {
				return nil, fmt.Errorf("stage %s in %s has no spec", podReadyStage, src)
			}
			ms := delay.Milliseconds()
			spec["delay"] = map[string]any{"durationMilliseconds": ms, "jitterDurationMilliseconds": ms}
			found = true
		}
		doc, err = yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(doc)
	}
	if !found {
		return nil, fmt.Errorf("no Stage %q in %s to add the pod-ready delay to", podReadyStage, src)
	}
	return out.Bytes(), nil
}

// NodeName returns the name of fake node i (0-based).
func NodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// createNodes creates n fake Node objects for kwok to manage (it makes them Ready and keeps their
// leases fresh). Existing nodes are left as they are.
func createNodes(ctx context.Context, cs kubernetes.Interface, n int) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	for i := range n {
		name := NodeName(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Annotations: map[string]string{
					"node.alpha.kubernetes.io/ttl": "0",
					"kwok.x-k8s.io/node":           "fake",
				},
				Labels: map[string]string{
					"kubernetes.io/arch":            "amd64",
					"kubernetes.io/os":              "linux",
					"kubernetes.io/hostname":        name,
					"kubernetes.io/role":            "agent",
					"node-role.kubernetes.io/agent": "",
					"type":                          "kwok",
				},
			},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
	}
	return nil
}

// nodesReady reports an error until the first n fake nodes have condition Ready=True.
func nodesReady(ctx context.Context, cs kubernetes.Interface, n int) error {
	for i := range n {
		node, err := cs.CoreV1().Nodes().Get(ctx, NodeName(i), metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := false
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			return fmt.Errorf("node %s not Ready", node.Name)
		}
	}
	return nil
}
