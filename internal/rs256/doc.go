// Package rs256 signs the RS256 JWTs crowsnest authenticates with (a
// GitHub App's, a Google service account's) and reads the RSA private
// keys they are signed with. It is shared by the notification services
// and the forges' clients, so that neither links the other.
package rs256
