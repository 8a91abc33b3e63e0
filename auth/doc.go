// Package auth says who is calling and what they may do: the roles, how a
// caller's identity is read (a verified client certificate's role URI, a
// bearer token, or the insecure-mode peer secret), and the file of hashed
// bearer tokens. api's interceptors use it with api's table of RPCs to
// roles (api/authz.go); this package knows no RPC.
//
// Roles (README "Roles"): reader (resolve, describe, list, watch, read
// paths) ⊂ writer (reader + broker mutations) ⊂ operator (everything,
// including cluster, snapshot and membership operations). peer is apart:
// the node-to-node service needs it and only nodes have it.
//
// Identity sources, in the order they are tried:
//
//   - A client certificate verified by the TLS handshake against the CA
//     bundle. Its role is the URI SAN metad://role/<role> (RoleFromCert);
//     a verified certificate without one has no role and is refused.
//   - A bearer token (metadata "authorization: Bearer <token>"), looked up
//     by its SHA-256 in the tokens file (Tokens). Tokens are never stored
//     in plaintext and cannot carry the peer role.
//   - In insecure mode only (no TLS): the peer secret (metadata
//     "metad-peer-secret"), which makes the caller a peer. Nodes of a
//     multi-node insecure cluster share it (--peer-secret-file); a single
//     node makes one up at start, so no caller but itself is a peer. While
//     the cluster's feature level is 1, Settings.LegacyPeers lets a call
//     with no credential at all through (a server of the release before
//     the secret may be a member); a wrong secret never passes.
//
// With neither TLS nor tokens configured (the loopback quick start) an
// anonymous caller is an operator, as metad has always been there, but
// never a peer: the node-to-node service stays closed to clients.
package auth
