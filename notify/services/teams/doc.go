// Package teams is Microsoft Teams' two notification services: `teams`
// posts an Office 365 connector message card to an incoming webhook,
// `teams-workflows` an adaptive card to a Workflows (Power Automate)
// webhook. Both take one webhook URL per recipient name and read the same
// card fields from their template blocks. Package services lists their
// Kinds; they send through svc.Client.
package teams
