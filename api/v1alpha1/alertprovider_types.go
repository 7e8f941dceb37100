package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AlertProviderType is a notification service.
// +kubebuilder:validation:Enum=slack;msteams;discord;rocket;gchat;generic
type AlertProviderType string

// Alert provider types.
const (
	AlertProviderSlack   AlertProviderType = "slack"
	AlertProviderMSTeams AlertProviderType = "msteams"
	AlertProviderDiscord AlertProviderType = "discord"
	// AlertProviderRocket posts to a Rocket.Chat incoming webhook (Slack-compatible text).
	AlertProviderRocket AlertProviderType = "rocket"
	// AlertProviderGoogleChat posts to a Google Chat space webhook.
	AlertProviderGoogleChat AlertProviderType = "gchat"
	// AlertProviderGeneric POSTs a JSON payload to any URL.
	AlertProviderGeneric AlertProviderType = "generic"
)

// AlertProvider is a notification target. Its URL lives only in a Secret.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ap,categories=sluice
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Channel",type=string,JSONPath=`.spec.channel`
type AlertProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AlertProviderSpec `json:"spec"`
}

// AlertProviderList is a list of AlertProviders.
//
// +kubebuilder:object:root=true
type AlertProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AlertProvider `json:"items"`
}

// AlertProviderSpec says where and how notifications go.
type AlertProviderSpec struct {
	// Type of the service.
	Type AlertProviderType `json:"type"`
	// Channel to post to (Slack), when the webhook allows overriding it.
	// +optional
	Channel string `json:"channel,omitempty"`
	// Username shown as the sender. Default sluice.
	// +optional
	Username string `json:"username,omitempty"`
	// SecretRef names a Secret in the provider's namespace whose key "address" holds the webhook
	// URL.
	SecretRef corev1.LocalObjectReference `json:"secretRef"`
	// Proxy is the HTTP(S) proxy notifications go through, e.g. http://proxy.corp:3128. Empty: a
	// direct connection.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	Proxy string `json:"proxy,omitempty"`
}
