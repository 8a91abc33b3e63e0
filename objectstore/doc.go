// Package objectstore is the physical layer of DESIGN.md §11: immutable
// objects addressed by (key, identity), where the identity names the exact
// bytes (here a SHA-256 content digest). Every read passes the identity it
// expects and fails with ErrIdentityMismatch rather than return bytes of
// another version, which is how a replaced object is detected, never served.
//
// Local, the embedded default, keeps objects in a directory (by default
// <data-dir>/objects); metad's garbage collector and the brokers on one
// machine share it. Store is the seam for other backends (S3 maps identity
// to ETag + VersionId and reads with If-Match / VersionId).
package objectstore
