// Package githubapp authenticates as a GitHub App installation: it signs
// the app's RS256 JWT (iss the app's ID), exchanges it for an
// installation token, keeps the token until shortly before it expires,
// and lets one caller renew it while the others wait. The exchange's
// HTTP request is made by the caller's own client (an Exchanger), so each
// caller keeps its own timeouts, transport and error classes: the
// notifications' GitHub service (notify/services/github) and the forges'
// pull-request client (writeback/forge) both use it.
package githubapp
