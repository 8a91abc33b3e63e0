// Package metadpb holds the generated Go code for metad's public gRPC API:
// the Metad service (streams, index, objects, pins, Resolve), the Cluster
// service (status, membership, leadership), and the node-to-node Peer
// service. The schema, with a comment per message, is metad.proto beside
// this file; package api serves it and package client calls it.
package metadpb
