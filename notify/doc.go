// Package notify sends notifications about a Subject (a Canary, a data-plane upgrade: any kind,
// name, namespace and phase) to the AlertProviders a list of alerts names:
// Slack (through github.com/slack-go/slack's incoming-webhook API, with Block Kit blocks),
// Microsoft Teams (an Adaptive Card), Discord (a webhook message with one embed) and a generic
// JSON webhook.
//
// A Notifier only delivers. Deciding when a transition deserves a message, and remembering which
// messages were sent (status.notifications), is the controllers' job.
//
// Webhook URLs live only in Secrets (key "address" of the Secret an AlertProvider names). They
// are never logged and never appear in returned errors, because those end up in conditions.
package notify
