// Package tlsconfig holds a node's (or a client's) TLS material and keeps
// it current: it loads a certificate, its key and a CA bundle from PEM
// files, and re-reads them when the files change (Watch polls their size,
// mtime and content hash) or when asked (Reload, which cmd/metad calls on
// SIGHUP). Rotation needs no restart and drops no call in flight: the
// tls.Configs it hands out pick the material per handshake
// (GetConfigForClient, GetClientCertificate, and a verifier that reads the
// current CA pool), so new connections see new material and established
// ones continue on what they negotiated.
//
// A reload that fails (a half-written file, a key that does not match the
// certificate) keeps the previous material and is reported; files are
// often replaced in several steps, and the next poll retries.
//
// Every config it makes is TLS 1.2 or later (Go prefers 1.3) and verifies
// the other side's chain against the CA bundle: servers require a client
// certificate or verify one if given (the caller chooses), clients verify
// the server's chain and, unless told otherwise, its host name.
//
// It also creates certificates (CreateCA, CreateCert) for `metad tls` and
// for tests: ECDSA P-256 keys, roles as URI SANs (auth.RoleURI).
package tlsconfig
