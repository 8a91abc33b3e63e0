// Package objectstore is metad's physical layer: objects
// addressed by (key, identity), where the identity names one exact version
// of the bytes. Stores are versioned like an S3 bucket: a Put under a key
// adds a version and never destroys an earlier one, every read names the
// version it wants, and only Delete — called by metad's garbage collector
// for the version it unlinked — removes one, exactly that one. So a key
// reused by a writer (or overwritten by anyone) never changes what a
// reader holding an identity gets: its version's bytes, or a failure.
//
// Open parses the store URL (Config.URL):
//
//   - file://DIR — Local, the embedded default (<data-dir>/objects). One
//     directory per key, named by the SHA-256 of the key, holding a file
//     "key" (the key itself) and one file "sha256-<hex>" per version; the
//     identity is "sha256:<hex>", the digest of the bytes, so identical
//     bytes put twice are one version. Earlier releases wrote the same
//     layout (keeping one version per key), so their directories read
//     unchanged. Several processes on one machine may share a directory.
//   - s3://BUCKET[/PREFIX] — S3, through the AWS SDK for Go v2 (this is
//     the only package that imports it). The bucket must have versioning
//     enabled; Open checks it is reachable with the credentials of the
//     SDK's default chain and versioned, and refuses otherwise with one
//     line naming the bucket. The identity is
//     "s3:<sha256 hex>:<etag>:<version id>"; reads are GetObject by
//     VersionId with If-Match and Range, Stat is HeadObject the same way,
//     Delete is DeleteObject of the VersionId (never the bare key). Puts
//     above S3Config.PartSize are multipart uploads; retries are the SDK
//     retryer's, bounded by S3Config.MaxAttempts.
//
// Failures are sentinels, classified with errors.Is, matching the
// resolver's candidate-failure kinds: ErrNotFound (OBJECT_MISSING: a 404,
// NoSuchKey or NoSuchVersion), ErrIdentityMismatch (IDENTITY_MISMATCH: a
// 412, or an identity that is not this store's), ErrCorrupt (CORRUPT: a
// whole-object read whose bytes do not hash to the identity, or a byte
// range whose bytes do not match the data checksum its writer committed).
// A store that does not answer — 5xx, SlowDown, timeouts, refused
// connections — is ErrUnavailable: transient, retryable, and not the
// candidate's fault, so readers neither report nor quarantine it.
//
// A store can check the identity's digest only when it reads the whole
// object; a record names a slice. So every reader of a record's bytes —
// the client's Read, metad read, the server's checks of a report, of a
// quarantine and of --verify-objects — goes through ReadRange or
// CheckRange (rangecheck.go), which check the slice against the record's
// data checksum (package checksum), the same way for every store.
//
// storetest is the behavioural contract every store passes; its cases run
// for file:// and for s3:// against a real SeaweedFS weed mini.
package objectstore
