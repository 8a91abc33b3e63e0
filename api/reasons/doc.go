// Package reasons is metad's one error table: for every reason of the
// metadpb.Reason enum, the gRPC code it is sent with, whether it is
// definite (the operation certainly did not take effect), the delay after
// which a client should retry it (zero: do not retry as is), and the text
// of the client's sentinel for it.
//
// The server (package api) builds its statuses from these rows, and the
// client (package client) derives its sentinels and their groups from
// them, so the two cannot disagree; api's wire test sends every row
// through a real gRPC server to the real client.
//
// Invariants, checked by this package's tests: every enum value but
// REASON_UNSPECIFIED has exactly one row, and every row is an enum value.
// A reason sent in more than one way lists its other ways in Row.Also, and
// the server sends a reason only in a way its row lists (api's wire test
// checks every error the server builds against its row).
//
// The package is a leaf: it imports nothing of the project's but the
// generated metadpb, so that both api and client can import it.
package reasons
