// Package webhook receives registry push notifications and turns them into
// "refresh this repository now" requests for the poller. One Receiver serves
// every configured sender at <prefix>/<source name>: Docker Hub, GitHub
// Container Registry (package events), Harbor, Quay, the CNCF distribution
// registry's notifications envelope and a generic JSON form. Each sender is
// authenticated as its product allows (GitHub's X-Hub-Signature-256 HMAC,
// Harbor's Authorization header, a bearer token or ?secret= for products that
// cannot sign, crowsnest's own X-Crowsnest-Signature-256 HMAC for the generic
// form), secrets are compared in constant time and required by default,
// and bodies are size-limited. Authentication comes before rate limiting:
// only authenticated requests draw on their source's token bucket, so a
// flood without the secret cannot starve a real sender, while failed
// attempts are limited per client address and source in a bounded LRU. A
// webhook only triggers a refresh: the tags and digests it names are
// hints, and the registry stays the source of truth.
package webhook
